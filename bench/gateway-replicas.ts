/**
 * Issue 19's replica rows of bench/gateway.ts, at each of its concurrencies and in the same run:
 *   - the gateway with the Redis lease store, one process, its port directly ("one replica direct");
 *   - three gateway processes on one Redis store (one key prefix: they share the members and the
 *     leases) behind a real HAProxy, deploy/haproxy.cfg rendered by test/helpers/haproxy.ts (TCP mode,
 *     `balance leastconn` over the three gateway ports, as deployed).
 * As with `egress serve` replicas, one process publishes the members (RedisLeaseStore.setPublisher, the
 * leader's job); the other two lease from what it published.
 *
 * Health checks are kept and point at something real: deploy/haproxy.cfg checks each gateway server with
 * GET /readyz on its replica's API port; a bench gateway has no API, so each process answers GET /readyz
 * on a port of its own from its store's `ready()` (200 while Redis is reachable, 503 otherwise: the store
 * part of serve's /readyz) and that port stands in for the API port. The row waits until HAProxy has
 * marked all three UP.
 *
 * The child side (openStore, listenReadyz) runs in bench/gateway's gateway role (roles.ts); the parent side
 * (replicaRows) is handed procs.ts' gateway start and load.ts' driver, so nothing is duplicated.
 */
import * as http from "node:http";
import type { Logger } from "pino";
import { RedisLeaseStore } from "../src/service/store";
import { startHaproxy } from "../test/helpers/haproxy";
import { freeLoopbackPort } from "../test/helpers/net";
import { REDIS_ROW } from "./gateway/report";

/** How a gateway process builds its lease store. */
export interface StoreSpec {
    /** redis://… of the bench's throwaway redis-server (test/helpers/redis.ts). */
    url: string;
    /** Key prefix; processes of one row share it. */
    prefix: string;
    /** Whether this process publishes the members (one per prefix, like serve's leader). */
    publish: boolean;
}

/** A started gateway process: its proxy port and its /readyz port (0 without a store). */
export interface BenchGateway {
    port: number;
    readyPort: number;
    stop(): Promise<void>;
}

export const ONE_REPLICA = REDIS_ROW;
export const THREE_REPLICAS = "3 gateways, redis store, HAProxy";

/** In a gateway process: the Redis store as `spec` says, connected, without per-target rest (as the memory rows). */
export async function openStore(spec: StoreSpec, log: Logger): Promise<RedisLeaseStore> {
    const store = new RedisLeaseStore({ url: spec.url, prefix: spec.prefix, log, targetCooldownSeconds: 0 });
    store.setPublisher(spec.publish); // before the first setMembers: a follower never publishes
    if (!(await store.connect(5000))) throw new Error("the bench's Redis is unreachable");
    return store;
}

/** In a gateway process: GET /readyz → 200 or 503 from `ready` (for HAProxy's checks); resolves to its port. */
export function listenReadyz(ready: () => { ok: boolean }): Promise<number> {
    const server = http.createServer((req, res) => {
        const status = req.url === "/readyz" ? (ready().ok ? 200 : 503) : 404;
        res.writeHead(status, { "content-type": "text/plain", "content-length": 0 }).end();
    });
    return new Promise((resolve) =>
        server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
    );
}

/**
 * The two rows at one concurrency: ONE_REPLICA and THREE_REPLICAS, each over a fresh key prefix
 * (`prefix` + "1:" / "3:"), and the connections HAProxy handed each of the three gateways.
 */
export async function replicaRows<R>(o: {
    redisUrl: string;
    prefix: string;
    startGateway(store: StoreSpec): Promise<BenchGateway>;
    drive(mode: string, proxyPort: number): Promise<R>;
}): Promise<{ one: R; three: R; spread: number[] }> {
    const single = await o.startGateway({ url: o.redisUrl, prefix: `${o.prefix}1:`, publish: true });
    let one: R;
    try {
        one = await o.drive(ONE_REPLICA, single.port);
    } finally {
        await single.stop();
    }
    const prefix = `${o.prefix}3:`;
    // The publisher first: the followers' first leases need its members in Redis.
    const gws = [await o.startGateway({ url: o.redisUrl, prefix, publish: true })];
    try {
        gws.push(...(await Promise.all([1, 2].map(() => o.startGateway({ url: o.redisUrl, prefix, publish: false })))));
        const lb = await startHaproxy({
            apiPort: await freeLoopbackPort(),
            gatewayPort: await freeLoopbackPort(),
            replicas: gws.map((g) => ({ apiPort: g.readyPort, gatewayPort: g.port })),
        });
        try {
            await lb.untilUp("egress_gateway_replicas", 3); // rise 2, inter 1s: about two seconds
            const three = await o.drive(THREE_REPLICAS, lb.gatewayPort);
            const spread = (await lb.stat())
                .filter((r) => r.pxname === "egress_gateway_replicas" && r.svname !== "BACKEND")
                .map((r) => r.stot);
            return { one, three, spread };
        } finally {
            await lb.cleanup();
        }
    } finally {
        await Promise.all(gws.map((g) => g.stop()));
    }
}

/** The closing line for one concurrency. */
export function replicaLine(c: number, one: { rate: number }, three: { rate: number }, spread: number[]): string {
    const pct = one.rate > 0 ? `${((100 * three.rate) / one.rate).toFixed(0)}%` : "-";
    return `${c} client(s): three gateway replicas behind HAProxy reach ${pct} of one replica direct (redis store; HAProxy's connections per replica ${spread.join("/")})`;
}
