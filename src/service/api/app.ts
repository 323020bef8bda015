import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import express from "express";
import type { Logger } from "pino";
import { rejectCredentialsInUrl } from "../http/auth";
import type { AppDeps } from "./deps";
import { answerFor, errorBody, errorHandler, HttpError, notFound } from "../http/errors";
import { blockRoutes } from "./routes/blocks";
import { poolRoutes } from "./routes/pools";
import { operationRoutes } from "./routes/operations";
import { discoveryRoutes } from "./routes/discovery";
import { systemRoutes } from "./routes/system";
import { dashboardRoutes } from "./routes/dashboard";
import { uiRoutes } from "./routes/ui";
import { docsRoutes } from "./routes/docs";
import { BODY_LIMIT_BYTES, isLeaseRequest, leaseFastPath, writeJson } from "./fast-path";
import { requestLogger, requestLogLevel, RequestLogging } from "../http/request-log";

/** Answered normally even while stopping: liveness (the process is alive and must not be killed mid-drain) and metrics. */
const ANSWERED_WHILE_STOPPING = new Set(["/healthz", "/metrics"]);

/**
 * While the service stops (server.ts waits for the running engine operation), the listener stays open
 * and answers 503 not_ready with Retry-After instead of refusing connections, and closes each
 * connection after the answer so keep-alive clients reconnect, to the next instance.
 */
function answerStopping(
    req: IncomingMessage,
    res: ServerResponse,
    reason: string,
    log: Logger,
    logging: RequestLogging,
): void {
    const e = answerFor(
        res,
        new HttpError("not_ready", reason, undefined, { "Retry-After": "5", Connection: "close" }),
    );
    if (log.isLevelEnabled(requestLogLevel(false, e.status, e))) logging(req, res);
    writeJson(res, e.status, errorBody(e), e.headers);
}

/**
 * The request listener: the lease routes' fast path first (it answers before Express's per-request
 * set-up, see fast-path.ts), the Express app for everything else. `listen` lives in server.ts so tests
 * can mount it on any port.
 */
export function createApp(deps: AppDeps): RequestListener {
    const logging = requestLogger(deps.log, isLeaseRequest);
    const app = express();
    app.disable("x-powered-by");
    app.set("etag", false);
    app.use(logging);
    app.use(rejectCredentialsInUrl);
    // Scale and lease bodies are tiny; the fast path enforces the same limit.
    app.use(express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: () => true }));
    app.use(systemRoutes(deps));
    app.use(docsRoutes());
    app.use(poolRoutes(deps));
    app.use(operationRoutes(deps));
    app.use(discoveryRoutes(deps));
    app.use(blockRoutes(deps));
    app.use(dashboardRoutes(deps));
    // The dashboard's static files at `/`: after every API route, so /v1 stays JSON (404 included).
    app.use(uiRoutes());
    app.use(notFound);
    app.use(errorHandler);
    const fast = leaseFastPath(deps, (req, res) => logging(req, res));
    const listener: RequestListener = (req, res) => {
        const ready = deps.ready();
        if (!ready.ok && ready.stopping && !ANSWERED_WHILE_STOPPING.has((req.url ?? "").split("?")[0]))
            return answerStopping(req, res, ready.reason, deps.log, logging);
        if (deps.forward?.(req, res)) return;
        if (!fast(req, res)) app(req, res);
    };
    expressApps.set(listener, app);
    return listener;
}

const expressApps = new WeakMap<RequestListener, express.Express>();

/** Every method and path the Express app of `listener` routes (Express syntax: `/v1/pools/:pool/replicas`). */
export function servedRoutes(listener: RequestListener): { method: string; path: string }[] {
    const app = expressApps.get(listener);
    if (!app) throw new Error("not a listener made by createApp");
    const out: { method: string; path: string }[] = [];
    type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } };
    const walk = (stack: Layer[]) => {
        for (const layer of stack) {
            if (layer.route)
                for (const m of Object.keys(layer.route.methods)) out.push({ method: m, path: layer.route.path });
            else if (layer.handle?.stack) walk(layer.handle.stack); // a Router mounted with app.use (no prefix)
        }
    };
    walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
    return out;
}
