import { Router } from "express";
import type { AppDeps } from "../app";
import { HttpError } from "../errors";

/** GET /v1/operations/:id and its Server-Sent Events stream of engine progress. */
export function operationRoutes(deps: AppDeps): Router {
    const r = Router();
    const find = (id: string) => {
        const op = deps.ops.get(id);
        if (!op) throw new HttpError(404, "unknown_operation", `no operation "${id}"`);
        return op;
    };
    r.get("/v1/operations", deps.auth("scale"), (_req, res) => {
        res.json({ operations: deps.ops.list() });
    });
    r.get("/v1/operations/:id", deps.auth("scale"), (req, res) => {
        res.json({ operation: find(req.params.id as string), events: deps.ops.eventsOf(req.params.id as string).length });
    });
    r.get("/v1/operations/:id/events", deps.auth("scale"), (req, res) => {
        const op = find(req.params.id as string);
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        const send = (type: string, data: unknown) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
        // Replay what already happened, then follow live until the operation settles.
        for (const e of deps.ops.eventsOf(op.id)) send("progress", e);
        send("status", op);
        const done = () => op.status !== "queued" && op.status !== "running";
        if (done()) return void res.end();
        const listener = (m: { type: string; data: unknown }) => {
            send(m.type, m.data);
            if (m.type === "status" && done()) finish();
        };
        const finish = () => {
            deps.ops.emitter.off(op.id, listener);
            res.end();
        };
        deps.ops.emitter.on(op.id, listener);
        req.on("close", () => deps.ops.emitter.off(op.id, listener));
    });
    return r;
}
