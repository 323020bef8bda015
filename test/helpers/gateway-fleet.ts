/**
 * An in-process gateway over members the test controls (test/service/gateway-forwarder.test.ts,
 * gateway-retries.test.ts): a Fleet over a memory lease store whose every lease and release is recorded,
 * clients that talk to the gateway (plain requests, CONNECT), members that misbehave on purpose, and the
 * `Proxy-Status` check. Everything on loopback.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import pino from "pino";
import { parseItem } from "./structured-field";
import { Fleet } from "../../src/service/fleet/fleet";
import { LeaseManager, type ReleaseOutcome } from "../../src/service/leases";
import { Gateway, type GatewayOptions } from "../../src/service/gateway";
import { createMetrics } from "../../src/service/observe/metrics";
import { sha256 } from "../../src/service/http/auth";
import { immediate } from "../../src/service/store/types";
import type { PoolConfig } from "../../src/model";

export interface RecordedRelease {
    proxy: string;
    outcome: ReleaseOutcome;
}

/**
 * A fleet whose members are `members` (id → url, pool) and a gateway over it taking token `token`.
 * `released` gets every release (the member and its outcome), in order.
 */
export async function startGatewayFleet(o: {
    token: string;
    members: { id: string; pool: string; url: string }[];
    pools: (Pick<PoolConfig, "name"> & Partial<PoolConfig>)[];
    gateway?: Partial<GatewayOptions>;
}): Promise<{
    gateway: Gateway;
    port: number;
    fleet: Fleet;
    released: RecordedRelease[];
    metrics: ReturnType<typeof createMetrics>;
}> {
    const fleet = new Fleet(new LeaseManager({ targetCooldownSeconds: 0 }), {
        setMembers() {},
        get: () => ({ state: "healthy" }),
    });
    fleet.sync(
        o.members.map((m, index) => ({
            id: m.id,
            pool: m.pool,
            provider: "local",
            kind: "local" as const,
            index,
            host: "127.0.0.1",
            port: Number(new URL(m.url).port),
            url: m.url,
            zone: "local",
        })),
        o.pools.map((p) => ({ cooldownSeconds: 0, ...p }) as never),
    );
    // Which member each lease went to, and every release's outcome (the memory store answers at once).
    const released: RecordedRelease[] = [];
    const members = new Map<string, string>();
    const acquire = fleet.acquire.bind(fleet);
    const record = (id: string, outcome: ReleaseOutcome) => {
        released.push({ proxy: members.get(id) ?? "?", outcome });
        members.delete(id); // a long run (gateway-soak) must not see the test's own record as a leak
    };
    fleet.acquire = (...args) => {
        // A retry's acquire ends the failed attempt's lease in the same step (AcquireRequest.replaces).
        const replaces = args[0].replaces;
        if (replaces && members.has(replaces.leaseId)) record(replaces.leaseId, replaces.outcome);
        const got = immediate(acquire(...args));
        if (got.ok) members.set(got.lease.id, got.lease.proxy.id);
        return got;
    };
    const release = fleet.release.bind(fleet);
    fleet.release = (id, outcome) => {
        record(id, outcome);
        return release(id, outcome);
    };
    const metrics = createMetrics();
    const gateway = new Gateway({
        port: 0,
        fleet,
        tokens: [{ name: "t", sha256: sha256(o.token).toString("hex"), scopes: ["lease"] }],
        metrics: metrics.gateway,
        log: pino({ level: "silent" }),
        ready: () => ({ ok: true }),
        waitMs: 0,
        ...o.gateway,
    });
    const port = (await gateway.listen()).port!;
    return { gateway, port, fleet, released, metrics };
}

/** Waits (up to 2 s) until `released` holds `n` entries, then checks it holds exactly `n`. */
export async function waitReleased(released: readonly RecordedRelease[], n: number): Promise<void> {
    for (let i = 0; i < 100 && released.length < n; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(released.length, n, `released: ${JSON.stringify(released)}`);
}

/** The `n` releases after the first `from` (waited for as waitReleased does), as `member:outcome`. */
export async function releasesSince(released: readonly RecordedRelease[], from: number, n: number): Promise<string[]> {
    await waitReleased(released, from + n);
    return released.slice(from).map((r) => `${r.proxy}:${r.outcome}`);
}

export interface GatewayAnswer {
    status: number;
    headers: http.IncomingHttpHeaders;
    body: string;
}

/** Clients of the gateway on `port` whose proxy password is `token`. */
export function gatewayClient(port: number, token: string) {
    const auth = (user: string) => `Basic ${Buffer.from(`${user}:${token}`).toString("base64")}`;
    return {
        auth,
        /** A CONNECT to `target` (host:port): the status line and headers of its answer (the tunnel is never used). */
        connect(user: string, target: string): Promise<GatewayAnswer> {
            return new Promise((resolve, reject) => {
                const req = http.request({
                    host: "127.0.0.1",
                    port,
                    method: "CONNECT",
                    path: target,
                    headers: { "proxy-authorization": auth(user) },
                    agent: false,
                });
                req.on("connect", (res, socket, head) => {
                    let body = head.toString("utf8"); // what came with the head
                    socket.setEncoding("utf8").on("data", (c) => (body += c));
                    socket.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
                    if (res.statusCode === 200) socket.end();
                });
                req.on("error", reject).end();
            });
        },
        /**
         * A request through the gateway. With `body`, a POST streamed in chunks (no Content-Length:
         * chunked) unless `o.method`/`o.headers` say otherwise.
         */
        fetch(
            user: string,
            url: string,
            body?: Buffer,
            o: { method?: string; headers?: Record<string, string> } = {},
        ): Promise<GatewayAnswer> {
            return new Promise((resolve, reject) => {
                const req = http.request(
                    {
                        host: "127.0.0.1",
                        port,
                        method: o.method ?? (body ? "POST" : "GET"),
                        path: url,
                        headers: { "proxy-authorization": auth(user), ...o.headers },
                        agent: false,
                    },
                    (res) => {
                        let text = "";
                        res.setEncoding("utf8")
                            .on("data", (c) => (text += c))
                            .on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
                    },
                );
                req.on("error", reject);
                for (let i = 0; body && i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
                req.end();
            });
        },
    };
}

/** Checks a member failure's `Proxy-Status`, read as an RFC 8941 Item: `egress; error=…; next-hop="…"; details="…"`. */
export function assertProxyStatus(field: string | string[] | undefined, error: string, member: string): void {
    assert.equal(typeof field, "string", "one Proxy-Status field");
    const item = parseItem(field as string);
    assert.deepEqual(item.value, { token: "egress" }, field as string);
    assert.deepEqual(item.params.error, { token: error }, field as string);
    assert.equal(item.params["next-hop"], member, field as string);
    assert.equal(typeof item.params.details, "string", field as string);
}

/**
 * A fake member on loopback: on the first bytes of each connection it writes `answer` (maybe nothing),
 * then, after `resetAfterMs`, resets the connection (unless undefined: it then holds it open, silent).
 */
export async function fakeMember(
    answer: string,
    resetAfterMs?: number,
): Promise<{ url: string; close(): Promise<void> }> {
    const open = new Set<net.Socket>();
    const server = net.createServer((s) => {
        open.add(s);
        s.once("close", () => open.delete(s));
        s.once("data", () => {
            if (answer) s.write(answer);
            if (resetAfterMs !== undefined) setTimeout(() => s.resetAndDestroy(), resetAfterMs);
        });
        s.on("error", () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
        close: () =>
            new Promise<void>((r) => {
                for (const s of open) s.destroy();
                server.close(() => r());
            }),
    };
}
