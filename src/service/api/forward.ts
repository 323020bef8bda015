import * as http from "node:http";
import type { Logger } from "pino";
import { type Cluster } from "../cluster/cluster";
import { describeCommandHolder, heldByCommand } from "../../state/cluster/records";
import { errorBody, HttpError } from "../http/errors";
import { writeJson } from "./fast-path";

/** Set on a forwarded request: a replica never forwards a request twice (no loops while leadership moves). */
export const FORWARDED_BY = "x-egress-forwarded-by";

/**
 * The routes only the leader can answer: it runs the engine, the operation journal and the heal loop.
 * Every other route (leases, the gateway, discovery, blocks, the dashboard's reads) any replica answers;
 * a scale request too: a follower queues it for the leader (src/state/cluster/scale-queue.ts), and an operation's
 * event stream, which every replica reads from the store (src/state/operations/store-events.ts).
 */
function leaderOnly(method: string, path: string): boolean {
    if (method !== "GET" || /^\/v1\/operations\/[^/]+\/events$/.test(path)) return false;
    return path === "/v1/operations" || path.startsWith("/v1/operations/") || path === "/v1/heal";
}

/**
 * On a follower, hands leader-only requests to the leader as they are (headers, token and body
 * included, streamed both ways) and answers
 * with the leader's answer plus `X-Egress-Leader`. Returns false for requests this replica answers itself.
 * No leader known (an election takes up to the lock's TTL), or the leader not answering: 503 not_ready
 * with Retry-After, which a client retries like any not_ready.
 */
export function leaderForwarder(cluster: Cluster, log: Logger) {
    return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
        const path = (req.url ?? "").split("?")[0];
        if (cluster.isLeader() || req.headers[FORWARDED_BY] || !leaderOnly(req.method ?? "", path)) return false;
        const refuse = (why: string) => {
            const e = new HttpError("not_ready", why, undefined, { "Retry-After": "2" });
            writeJson(res, e.status, errorBody(e), e.headers);
        };
        const leader = cluster.leader();
        if (!leader || leader.id === cluster.id) {
            refuse("no replica leads the stack right now (an election takes a few seconds); retry shortly");
            return true;
        }
        // An egress command (CLI `up` etc.) holds the lock: no replica leads, and a command has no API.
        if (heldByCommand(leader)) {
            refuse(
                `no replica leads the stack while ${describeCommandHolder(leader)} holds its lock; retry once it ends`,
            );
            return true;
        }
        void cluster.replica(leader.id).then((to) => {
            if (!to) return refuse(`the leader ${leader.id} has no heartbeat record; retry shortly`);
            const target = new URL(req.url ?? "/", to.url);
            const up = http.request(
                target,
                { method: req.method, headers: { ...req.headers, host: target.host, [FORWARDED_BY]: cluster.id } },
                (answer) => {
                    res.writeHead(answer.statusCode ?? 502, { ...answer.headers, "x-egress-leader": leader.id });
                    answer.pipe(res);
                },
            );
            up.on("error", (e) => {
                log.warn({ leader: leader.id, error: e.message }, "forwarding a request to the leader failed");
                if (!res.headersSent) refuse(`the leader ${leader.id} did not answer (${e.message}); retry shortly`);
                else res.destroy();
            });
            res.on("close", () => up.destroy());
            req.pipe(up);
        });
        return true;
    };
}
