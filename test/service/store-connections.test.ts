/**
 * A replica opens its Redis connections once (issue 37): at most two per `egress serve --store`
 * process, whatever the number of its parts (the lease store's serving connection, and one control
 * connection every cluster part shares: start/store-session.ts). Counted with Redis' own CLIENT LIST,
 * each client matched to the process whose socket it is (/proc), on real redis-servers:
 * - two replicas of one stack on a plain `redis://` store, after every part had work to do (a lease
 *   taken on the follower and released on the leader, a scale through the follower, queued for the
 *   leader, journalled, streamed and applied);
 * - one replica on a `redis+sentinel://` store, whose grants wait for a replica (WAIT on the serving
 *   connection): a lease is still granted, and the primary sees at most two clients of the process.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import Redis from "ioredis";
import {
    endProcProject,
    procProject,
    type ProcProject,
    serve,
    type ServeProcess,
    until,
    untilHealthy,
} from "../helpers/processes";
import { startRedis, type TestRedis } from "../helpers/redis";
import { startSentinelRedis, type TestSentinelRedis } from "../helpers/redis-sentinel";
import { leaderOf } from "../helpers/replicas";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 3, cooldownSeconds: 0 }],
};
const projects: ProcProject[] = [];
let redis: TestRedis | undefined;
let sentinel: TestSentinelRedis | undefined;
after(async () => {
    for (const p of projects) endProcProject(p);
    await redis?.cleanup();
    await sentinel?.cleanup();
});

/** The local TCP ports of the sockets process `pid` holds open (its fds, matched in /proc/net/tcp*). */
function localPortsOf(pid: number): Set<number> {
    const inodes = new Set<string>();
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        try {
            const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
            if (m) inodes.add(m[1]);
        } catch {
            // closed meanwhile
        }
    }
    const ports = new Set<number>();
    for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
        for (const line of fs.readFileSync(file, "utf8").split("\n").slice(1)) {
            const f = line.trim().split(/\s+/);
            if (f.length > 9 && inodes.has(f[9])) ports.add(parseInt(f[1].split(":").pop()!, 16));
        }
    }
    return ports;
}

/** CLIENT LIST of the Redis at `port`: the client ports it lists (`addr=127.0.0.1:<port>`). */
async function clientPorts(port: number, password: string): Promise<number[]> {
    const r = new Redis({ host: "127.0.0.1", port, password, lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
        await r.connect();
        const list = String(await r.client("LIST"));
        return [...list.matchAll(/\baddr=[^ ]*:(\d+) /g)].map((m) => Number(m[1]));
    } finally {
        r.disconnect();
    }
}

/** The most clients `svc` held on that Redis at once, over a few samples a second apart. */
async function mostConnections(svc: ServeProcess, port: number, password: string): Promise<number> {
    let most = 0;
    for (let i = 0; i < 4; i++) {
        const mine = localPortsOf(svc.child.pid!);
        const n = (await clientPorts(port, password)).filter((p) => mine.has(p)).length;
        most = Math.max(most, n);
        await new Promise((r) => setTimeout(r, 1000));
    }
    return most;
}

const memberIds = async (svc: ServeProcess) =>
    ((await svc.call("GET", "/v1/proxies")).body.proxies as { id: string }[]).map((x) => x.id).sort();

test("two replicas on a redis:// store: at most two connections each, after every part worked", async () => {
    redis = await startRedis();
    const p = procProject("conn", config);
    projects.push(p);
    const args = ["--store", redis.url, "--probe-interval", "0.5"];
    const replicas = [await serve(p, args), await serve(p, args)];
    const leader = await leaderOf(replicas);
    const follower = replicas.find((r) => r !== leader)!;
    await untilHealthy(follower, 1);

    // A lease on the follower, released on the leader: the lease store's connections.
    const lease = await follower.call("POST", "/v1/leases", { pool: "web" });
    assert.equal(lease.status, 201, JSON.stringify(lease.body));
    const released = await leader.call("POST", `/v1/leases/${lease.body.lease.id}/release`, { outcome: "ok" });
    assert.equal(released.status, 200, JSON.stringify(released.body));
    // A scale through the follower: its queue, then the leader's journal, events and desired counts.
    const scaled = await follower.call("PUT", "/v1/pools/web/replicas", { replicas: 2 });
    assert.equal(scaled.status, 202, JSON.stringify(scaled.body));
    const id = scaled.body.operation.id;
    const op = await until(
        "the scale settled, read through the follower",
        async () => {
            const o = (await follower.call("GET", `/v1/operations/${id}`)).body.operation;
            return o && o.status !== "queued" && o.status !== "running" ? o : undefined;
        },
        120_000,
        200,
    );
    assert.equal(op.status, "succeeded", JSON.stringify(op));
    await until(
        "2 members on both",
        async () => (await Promise.all(replicas.map(memberIds))).every((m) => m.length === 2),
        60_000,
    );

    for (const svc of replicas) {
        const n = await mostConnections(svc, redis.port, redis.password);
        assert.ok(n >= 1 && n <= 2, `${svc === leader ? "the leader" : "the follower"} held ${n} connections to Redis`);
    }
});

test("a replica on a redis+sentinel:// store: grants that WAIT for a replica are served; at most two connections to the primary", async () => {
    sentinel = await startSentinelRedis({ replicas: 1 });
    const p = procProject("connsnt", config);
    projects.push(p);
    const svc = await serve(p, ["--store", sentinel.url, "--probe-interval", "0.5"]);
    await untilHealthy(svc, 1);
    const lease = await svc.call("POST", "/v1/leases", { pool: "web" });
    assert.equal(lease.status, 201, JSON.stringify(lease.body));
    const primary = await sentinel.primary();
    const n = await mostConnections(svc, primary.port, sentinel.password);
    assert.ok(n >= 1 && n <= 2, `the replica held ${n} connections to the primary`);
});
