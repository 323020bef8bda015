/** The routes that change or watch the stack: pools and scale, operations and their event stream. */
import { z } from "zod";
import * as s from "../schemas";
import { type Op, json, error, withBody, poolParams, idParams } from "./helpers";

export const CONTROL_OPERATIONS: Op[] = [
    {
        method: "get",
        path: "/v1/pools",
        scope: "discover",
        tags: ["pools"],
        operationId: "listPools",
        summary: "Pools with desired, actual, healthy and leased counts",
        responses: { "200": json(s.poolsResponse, "Pools") },
    },
    {
        method: "put",
        path: "/v1/pools/{pool}/replicas",
        scope: "scale",
        tags: ["pools"],
        operationId: "scalePool",
        summary: "Set a pool's desired replicas; applied by one engine operation (latest request wins)",
        request: {
            params: poolParams,
            body: { required: true, content: { "application/json": { schema: s.scaleBody } } },
        },
        responses: {
            "202": {
                ...json(s.scaleResponse, "Accepted; the body is the operation that applies it"),
                headers: z.object({ Location: z.string().describe("/v1/operations/{id}") }),
            },
            "400": error(
                "Bad request: `invalid_request` (details list each field and rule), `not_scalable` (the pool's provider fixes its members, e.g. a list of existing proxies), `token_in_url`, `malformed_json`",
            ),
            "404": error("`unknown_pool`"),
            "409": error(
                "`autoscaled`: the pool follows demand (its `autoscale` in the stack config); change those bounds instead",
            ),
            ...withBody,
        },
    },
    {
        method: "get",
        path: "/v1/operations",
        scope: "scale",
        tags: ["operations"],
        operationId: "listOperations",
        summary: "Recent engine operations (scale, up, heal, autoscale)",
        responses: { "200": json(s.operationsResponse, "Operations") },
    },
    {
        method: "get",
        path: "/v1/operations/{id}",
        scope: "scale",
        tags: ["operations"],
        operationId: "getOperation",
        summary: "An engine operation",
        request: { params: idParams("Operation id (op_…)") },
        responses: { "200": json(s.operationResponse, "The operation"), "404": error("`unknown_operation`") },
    },
    {
        method: "get",
        path: "/v1/operations/{id}/events",
        scope: "scale",
        tags: ["operations"],
        operationId: "streamOperationEvents",
        summary: "Server-Sent Events of the operation's progress",
        description:
            "`status` events (the operation, at creation and at each change) and `progress` events (engine progress, resource by resource), each with an `id:` counting up from 1. Send `Last-Event-ID` to get only the events after it (from a buffer of the last 1000). A `: ping` comment comes every 15 s while the operation runs; the stream ends when it settles. With replicas any replica streams it, with the same ids, from the store.",
        request: {
            params: idParams("Operation id (op_…)"),
            headers: z.object({
                "Last-Event-ID": z
                    .string()
                    .optional()
                    .describe("Resume after this event id (replayed from a bounded buffer)"),
            }),
        },
        responses: {
            "200": {
                description:
                    "text/event-stream; each event's `data:` is JSON: a ProgressEvent for `progress`, an Operation for `status`",
                content: {
                    "text/event-stream": {
                        schema: z.string(),
                        itemSchema: z.union([s.progressEventSchema, s.operationSchema]),
                    },
                },
            },
            "404": error("`unknown_operation`"),
        },
    },
];
