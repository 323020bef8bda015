/** The service's own routes: echo, the OpenAPI document and /docs, health, readiness and metrics. */
import { z } from "zod";
import * as s from "../schemas";
import { type Op, json, error } from "./helpers";

export const SYSTEM_OPERATIONS: Op[] = [
    {
        method: "get",
        path: "/v1/echo",
        tags: ["system"],
        operationId: "echo",
        summary: "The caller's IP (the health probes' default check URL); no token",
        responses: { "200": json(s.echoResponse, "The caller's address") },
    },
    {
        method: "get",
        path: "/v1/openapi.json",
        tags: ["system"],
        operationId: "openapi",
        summary: "This document; no token",
        responses: { "200": json(z.record(z.string(), z.unknown()), "OpenAPI 3.1 document") },
    },
    {
        method: "get",
        path: "/docs",
        tags: ["system"],
        operationId: "docs",
        summary: "Interactive API docs (swagger-ui, served locally); no token",
        responses: { "200": { description: "HTML page", content: { "text/html": { schema: z.string() } } } },
    },
    {
        method: "get",
        path: "/docs/{asset}",
        tags: ["system"],
        operationId: "docsAsset",
        summary: "Static files of the API docs page; no token",
        request: { params: z.object({ asset: z.string().describe("A swagger-ui-dist file name") }) },
        responses: {
            "200": {
                description: "The file (CSS or JavaScript)",
                content: { "text/css": { schema: z.string() }, "application/javascript": { schema: z.string() } },
            },
            "404": error("`not_found`: not one of the served files"),
        },
    },
    {
        method: "get",
        path: "/healthz",
        tags: ["system"],
        operationId: "healthz",
        summary: "Liveness (answered while stopping too)",
        alwaysOn: true,
        responses: { "200": json(s.okResponse, "Alive") },
    },
    {
        method: "get",
        path: "/readyz",
        tags: ["system"],
        operationId: "readyz",
        summary: "Readiness: stack view loaded and recovery done",
        responses: { "200": json(s.okResponse, "Ready") },
    },
    {
        method: "get",
        path: "/metrics",
        tags: ["system"],
        operationId: "metrics",
        summary: "Prometheus metrics (answered while stopping too)",
        alwaysOn: true,
        responses: {
            "200": { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } },
        },
    },
];
