import { Router } from "express";
import type { AppDeps } from "../deps";
import { openapiDocument } from "../openapi";
import { HttpError } from "../../http/errors";
import type { z } from "zod";
import type { clusterResponse, echoResponse, healResponse, okResponse, providersHealthResponse } from "../schemas";

/** Echo (probe target), liveness, readiness, metrics, OpenAPI, provider health, the cluster, the reconcile loop's status. */
export function systemRoutes(deps: AppDeps): Router {
    const r = Router();
    // Public on purpose: it only tells the caller its own address, and probes through proxies carry no token.
    r.get("/v1/echo", (req, res) => {
        res.json({ ip: (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "") } satisfies z.infer<
            typeof echoResponse
        >);
    });
    r.get("/healthz", (_req, res) => {
        res.json({ ok: true } satisfies z.infer<typeof okResponse>);
    });
    r.get("/readyz", (_req, res) => {
        const ready = deps.ready();
        if (!ready.ok) throw new HttpError("not_ready", ready.reason);
        const store = deps.storeReady?.();
        if (store && !store.ok)
            throw new HttpError("store_unavailable", store.reason, undefined, { "Retry-After": "2" });
        res.json({ ok: true } satisfies z.infer<typeof okResponse>);
    });
    r.get("/metrics", async (_req, res) => {
        res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
    });
    r.get("/v1/openapi.json", (_req, res) => {
        res.json(openapiDocument(deps.version));
    });
    r.get("/v1/providers/health", deps.auth("discover"), (_req, res) => {
        res.json({ providers: deps.providerHealth() } satisfies z.infer<typeof providersHealthResponse>);
    });
    r.get("/v1/cluster", deps.auth("discover"), async (_req, res) => {
        res.json((await deps.cluster()) satisfies z.infer<typeof clusterResponse>);
    });
    r.get("/v1/heal", deps.auth("discover"), (_req, res) => {
        res.json(deps.reconcile() satisfies z.infer<typeof healResponse>);
    });
    return r;
}
