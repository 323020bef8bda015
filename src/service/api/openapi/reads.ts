/** What the dashboard reads: whoami, live leases, the timeline, provider checks, the cluster and heal. */
import * as s from "../schemas";
import { type Op, json } from "./helpers";

export const READS_OPERATIONS: Op[] = [
    {
        method: "get",
        path: "/v1/whoami",
        scope: "any",
        tags: ["system"],
        operationId: "whoami",
        summary: "The presenting token's name and scopes (never the token); any valid token",
        responses: { "200": json(s.whoamiSchema, "Who this token is") },
    },
    {
        method: "get",
        path: "/v1/leases",
        scope: "discover",
        tags: ["leases"],
        operationId: "listLeases",
        summary: "Active leases, without their ids (an id is what releases a lease)",
        responses: { "200": json(s.activeLeasesSchema, "Active leases") },
    },
    {
        method: "get",
        path: "/v1/timeline",
        scope: "discover",
        tags: ["pools"],
        operationId: "timeline",
        summary: "Healthy and leased members per pool over the last hour, sampled by the service",
        responses: { "200": json(s.timelineSchema, "Samples, oldest first") },
    },
    {
        method: "get",
        path: "/v1/providers/health",
        scope: "discover",
        tags: ["system"],
        operationId: "providersHealth",
        summary: "Provider checks with per-target verdicts",
        responses: { "200": json(s.providersHealthResponse, "Verdicts") },
    },
    {
        method: "get",
        path: "/v1/heal",
        scope: "discover",
        tags: ["system"],
        operationId: "healStatus",
        summary: "Reconcile loop: last round's decisions, providers blocking repairs, members in backoff",
        responses: { "200": json(s.healResponse, "Status") },
    },
    {
        method: "get",
        path: "/v1/cluster",
        scope: "discover",
        tags: ["system"],
        operationId: "getCluster",
        summary: "The replicas of this stack that are alive, and which one leads since when",
        description:
            "With `--store redis://…` several `egress serve` replicas share one stack: every one answers every route; one holds the leader lock and drives the engine (scale, heal, drain, probes that decide health). Followers forward scale, operation and heal requests to it. With the memory store there is one replica and it leads.",
        responses: { "200": json(s.clusterResponse, "The cluster") },
    },
];
