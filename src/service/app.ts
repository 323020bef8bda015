import express from "express";
import pinoHttp from "pino-http";
import type { Logger } from "pino";
import type { Scope } from "./auth";
import type { RequestHandler } from "express";
import { errorHandler, notFound } from "./errors";
import type { Metrics } from "./metrics";
import type { OperationLog } from "./operations";
import type { Scaler } from "./scaler";
import type { Fleet } from "./fleet";
import type { ProviderHealthReport } from "./provider-health";
import { poolRoutes } from "./routes/pools";
import { operationRoutes } from "./routes/operations";
import { discoveryRoutes } from "./routes/discovery";
import { systemRoutes } from "./routes/system";

/** Everything the HTTP layer needs, built by src/service/server.ts (or by tests with synthetic parts). */
export interface AppDeps {
    projectRoot: string;
    stack: string;
    version: string;
    log: Logger;
    auth: (scope: Scope) => RequestHandler;
    scaler: Scaler;
    ops: OperationLog;
    fleet: Fleet;
    metrics: Metrics;
    providerHealth: () => ProviderHealthReport[];
    ready: () => { ok: true } | { ok: false; reason: string };
}

/** Largest accepted request body; scale and lease bodies are tiny. */
export const BODY_LIMIT = "16kb";

/** The Express app. `listen` lives in server.ts so tests can mount it on any port. */
export function createApp(deps: AppDeps): express.Express {
    const app = express();
    app.disable("x-powered-by");
    app.set("etag", false);
    app.use(pinoHttp({ logger: deps.log, autoLogging: { ignore: (req) => req.url === "/healthz" || req.url === "/metrics" || req.url === "/v1/echo" } }));
    app.use(express.json({ limit: BODY_LIMIT, strict: true, type: () => true }));
    app.use(systemRoutes(deps));
    app.use(poolRoutes(deps));
    app.use(operationRoutes(deps));
    app.use(discoveryRoutes(deps));
    app.use(notFound);
    app.use(errorHandler);
    return app;
}
