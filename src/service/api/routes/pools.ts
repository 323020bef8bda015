import { Router } from "express";
import type { AppDeps } from "../deps";
import { HttpError } from "../../http/errors";
import { NotAcceptingError } from "../../control/scaler";
import { queuedOperation } from "./operations";
import { storeFailure } from "../lease-api";
import { parseOr400, scaleBody, type poolsResponse, type scaleResponse } from "../schemas";
import type { z } from "zod";
import { autoscaleRefusal, loadStackConfig, scaleRefusal } from "../../../config";
import { policyView, rotates } from "../../control/rotate/view";

/** GET /v1/pools and PUT /v1/pools/:pool/replicas (desired state; 202 with the applying operation). */
export function poolRoutes(deps: AppDeps): Router {
    const r = Router();
    r.get("/v1/pools", deps.auth("discover"), async (_req, res) => {
        const cfg = loadStackConfig(deps.projectRoot, deps.stack);
        const counts = deps.fleet.poolCounts();
        // A follower's stack file may be another host's copy: the store's counts are the leader's (its own file's).
        const stored =
            deps.storedDesired && deps.scaleQueue?.following()
                ? await deps.storedDesired().catch(() => undefined)
                : undefined;
        res.json({
            pools: cfg.pools.map((p) => ({
                name: p.name,
                provider: p.provider,
                desired: deps.scaler.desired(p.name) ?? stored?.[p.name] ?? p.replicas,
                maxReplicas: p.maxReplicas,
                actual: counts[p.name]?.actual ?? 0,
                healthy: counts[p.name]?.healthy ?? 0,
                leased: counts[p.name]?.leased ?? 0,
                draining: counts[p.name]?.draining ?? 0,
                scalable: scaleRefusal(cfg, p) === undefined && !p.autoscale,
                ...(p.autoscale ? { autoscale: { ...p.autoscale, ...deps.autoscaler?.view(p.name) } } : {}),
                ...(rotates(p) ? { rotation: { ...policyView(p), ...deps.rotator?.view(p.name) } } : {}),
            })),
        } satisfies z.infer<typeof poolsResponse>);
    });
    r.put("/v1/pools/:pool/replicas", deps.auth("scale"), async (req, res) => {
        const pool = req.params.pool as string;
        const cfg = loadStackConfig(deps.projectRoot, deps.stack);
        const found = cfg.pools.find((p) => p.name === pool);
        if (!found)
            throw new HttpError(
                "unknown_pool",
                `no pool named "${pool}" (known: ${cfg.pools.map((p) => p.name).join(", ") || "none"})`,
            );
        const autoscaled = autoscaleRefusal(cfg, found, deps.stack);
        if (autoscaled) {
            const { message, min, max, path } = autoscaled;
            throw new HttpError("autoscaled", message, { min, max, path });
        }
        const refused = scaleRefusal(cfg, found);
        if (refused) throw new HttpError("not_scalable", refused);
        const { replicas } = parseOr400(scaleBody, req.body, "scale request");
        if (replicas > found.maxReplicas)
            throw new HttpError(
                "invalid_request",
                `replicas: must not exceed maxReplicas (${found.maxReplicas}) for pool "${pool}"`,
                [{ field: "replicas", rule: `must not exceed ${found.maxReplicas}` }],
            );
        let op;
        try {
            // A follower queues it for the leader (src/state/cluster/scale-queue.ts): accepted even while none leads.
            op = deps.scaleQueue?.following()
                ? queuedOperation(await deps.scaleQueue.enqueue(pool, replicas).catch(storeFailure))
                : deps.scaler.request(pool, replicas);
        } catch (e) {
            if (e instanceof NotAcceptingError)
                throw new HttpError("not_ready", e.message, { reason: e.reason }, { "Retry-After": "5" });
            throw e;
        }
        req.log.info({ pool, replicas, operation: op.id }, "scale requested");
        res.status(202)
            .location(`/v1/operations/${op.id}`)
            .json({ operation: op } satisfies z.infer<typeof scaleResponse>);
    });
    return r;
}
