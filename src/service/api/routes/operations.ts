import { Router } from "express";
import type { AppDeps } from "../deps";
import { HttpError } from "../../http/errors";
import type { z } from "zod";
import type { operationResponse, operationsResponse } from "../schemas";
import type { StreamEntry } from "../../operations/journal";
import type { Operation } from "../../operations/operation";
import type { QueuedScale } from "../../cluster/scale-queue";

/** Default time between `: ping` comments on an idle event stream (proxies and browsers drop silent connections). */
export const SSE_HEARTBEAT_MS = 15_000;

/** `Last-Event-ID`: absent → 0 (replay everything buffered); anything but a whole number is a client mistake. */
function lastEventId(header: string | undefined): number {
    if (header === undefined || header.trim() === "") return 0;
    if (!/^\d{1,15}$/.test(header.trim()))
        throw new HttpError(
            "invalid_request",
            `Last-Event-ID: must be an event id this stream sent (a whole number), got "${header.slice(0, 40)}"`,
            [{ field: "Last-Event-ID", rule: "must be a whole number" }],
        );
    return Number(header.trim());
}

/** A follower's scale request the leader has not taken yet, shown as the queued operation it becomes. */
type QueuedOperation = Operation & { status: "queued" };

/**
 * An id a follower answered with a moment ago (cluster/scale-queue.ts): the leader takes its queue every
 * 250 ms, so wait a little for the operation; still not taken (this replica stops, or it is a follower
 * that will forward nothing), the queued request as an operation.
 */
async function takenSoon(deps: AppDeps, id: string): Promise<Operation | QueuedOperation | undefined> {
    const q = await deps.scaleQueue?.peek(id);
    if (!q) return deps.ops.get(id);
    for (let waited = 0; waited < 2000 && !deps.ops.get(id); waited += 50) await new Promise((r) => setTimeout(r, 50));
    return deps.ops.get(id) ?? queuedOperation(q);
}

/** What a follower answers (202) for a request it queued: the operation as it starts on the leader. */
export function queuedOperation(q: QueuedScale): QueuedOperation {
    return {
        id: q.id,
        kind: "scale",
        status: "queued",
        desired: { [q.pool]: q.replicas },
        requests: 1,
        createdAt: q.at,
    };
}

/** GET /v1/operations, /v1/operations/:id and its Server-Sent Events stream of engine progress. */
export function operationRoutes(deps: AppDeps): Router {
    const r = Router();
    const heartbeatMs = deps.sseHeartbeatMs ?? SSE_HEARTBEAT_MS;
    const find = async (id: string): Promise<Operation | QueuedOperation> => {
        const op = deps.ops.get(id) ?? (await takenSoon(deps, id));
        if (!op) throw new HttpError("unknown_operation", `no operation "${id}"`);
        return op;
    };
    r.get("/v1/operations", deps.auth("scale"), (_req, res) => {
        res.json({ operations: deps.ops.list() } satisfies z.infer<typeof operationsResponse>);
    });
    r.get("/v1/operations/:id", deps.auth("scale"), async (req, res) => {
        const op = await find(req.params.id as string);
        res.json({ operation: op, events: deps.ops.eventsOf(op.id).length } satisfies z.infer<
            typeof operationResponse
        >);
    });
    r.get("/v1/operations/:id/events", deps.auth("scale"), async (req, res) => {
        const found = await find(req.params.id as string);
        const op = deps.ops.get(found.id);
        if (!op)
            throw new HttpError(
                "not_ready",
                `operation "${found.id}" is queued for the leader, which has not taken it yet; retry shortly`,
                undefined,
                { "Retry-After": "1" },
            );
        const after = lastEventId(req.get("last-event-id"));
        res.writeHead(200, {
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            connection: "keep-alive",
        });
        // `event:` first: existing readers pick blocks by their first line.
        const send = (e: StreamEntry) =>
            res.write(`event: ${e.type}\nid: ${e.id}\ndata: ${JSON.stringify(e.data)}\n\n`);
        // Replay what happened after the client's last event (everything for a new client), then follow live
        // until the operation settles. Replay and subscribe run in one tick, so nothing falls between them.
        for (const e of deps.ops.streamOf(op.id, after)) send(e);
        const done = () => op.status !== "queued" && op.status !== "running";
        if (done()) return void res.end();
        const listener = (e: StreamEntry) => {
            send(e);
            if (e.type === "status" && done()) finish();
        };
        const ping = setInterval(() => res.write(": ping\n\n"), heartbeatMs);
        const finish = () => {
            clearInterval(ping);
            deps.ops.emitter.off(op.id, listener);
            res.end();
        };
        deps.ops.emitter.on(op.id, listener);
        req.on("close", () => {
            clearInterval(ping);
            deps.ops.emitter.off(op.id, listener);
        });
    });
    return r;
}
