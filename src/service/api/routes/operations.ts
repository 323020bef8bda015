import { Router } from "express";
import type { AppDeps } from "../deps";
import { HttpError } from "../../http/errors";
import type { z } from "zod";
import type { operationResponse, operationsResponse } from "../schemas";
import type { Operation } from "../../../state/operations/operation";
import type { QueuedScale } from "../../../state/cluster/scale-queue";
import { streamFromMemory, streamFromStore } from "./operation-events";
import { storeUnavailable } from "../lease-api";
import { StoreUnavailableError } from "../../store";

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
 * An id a follower answered with a moment ago (src/state/cluster/scale-queue.ts): the leader takes its queue every
 * 250 ms, so wait a little for the operation; still not taken (this replica stops, or it is a follower
 * that will forward nothing), the queued request as an operation.
 */
async function takenSoon(deps: AppDeps, id: string): Promise<Operation | QueuedOperation | undefined> {
    const q = await deps.scaleQueue?.peek(id);
    if (!q) return deps.ops.get(id);
    for (let waited = 0; waited < 2000 && !deps.ops.get(id); waited += 50) await new Promise((r) => setTimeout(r, 50));
    return deps.ops.get(id) ?? queuedOperation(q);
}

/**
 * With replicas: the store journal's record of `id`. The leader writes it a moment after it answered the
 * request, and a client may ask another replica at once (one address in front of them all), so an id
 * not there yet is looked for again for up to 1.5 s, unless it is a request still queued (find() answers that).
 */
async function storedSoon(deps: AppDeps, id: string): Promise<Operation | undefined> {
    if (!deps.storedOperation) return undefined;
    for (let waited = 0; ; waited += 100) {
        const op = await deps.storedOperation(id).catch((e: Error) => {
            throw storeUnavailable(new StoreUnavailableError(`the store's operation journal: ${e.message}`, 2));
        });
        if (op || waited >= 1500 || (await deps.scaleQueue?.peek(id))) return op;
        await new Promise((r) => setTimeout(r, 100));
    }
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
        const id = req.params.id as string;
        // With replicas the store's journal knows every leader's operations; this replica's memory only its own.
        const found = deps.ops.get(id) ?? (await storedSoon(deps, id)) ?? (await find(id));
        const after = lastEventId(req.get("last-event-id"));
        // With replicas a request still queued streams too: its entries come once the leader takes it.
        if (deps.opEvents) return streamFromStore(deps, found, after, req, res);
        const op = deps.ops.get(found.id);
        if (!op)
            throw new HttpError(
                "not_ready",
                `operation "${found.id}" is queued for the leader, which has not taken it yet; retry shortly`,
                undefined,
                { "Retry-After": "1" },
            );
        streamFromMemory(deps, op, after, req, res);
    });
    return r;
}
