/**
 * The child roles of bench/gateway.ts (forked as `gateway.js <role>`): the origin and the gateway. Each
 * runs in a process of its own so that neither shares an event loop with the load or the members.
 */
import * as http from "node:http";
import * as net from "node:net";
import pino from "pino";
import { listenReadyz, openStore, StoreSpec } from "../gateway-replicas";

/** The origin: 200 with a short body, like a small page; a CONNECT reaches it as a plain TCP target. */
export function runOrigin(): void {
    const body = Buffer.from("x".repeat(512));
    const server = http.createServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
        res.end(body);
    });
    server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }));
}

/** The gateway over `urls` (one pool, "bench"), its token from IPC (never argv or env); `store`: leases in Redis. */
export function runGateway(): void {
    process.once("message", async (m: { token: string; urls: string[]; store?: StoreSpec }) => {
        // Required here, not imported: the origin role never loads the service.
        const { Fleet } = require("../../src/service/fleet/fleet") as typeof import("../../src/service/fleet/fleet");
        const { LeaseManager } = require("../../src/service/leases") as typeof import("../../src/service/leases");
        const { Gateway } = require("../../src/service/gateway") as typeof import("../../src/service/gateway");
        const { createMetrics } =
            require("../../src/service/observe/metrics") as typeof import("../../src/service/observe/metrics");
        const { sha256 } = require("../../src/service/http/auth") as typeof import("../../src/service/http/auth");
        const { createLogger } = require("../../src/log/logger") as typeof import("../../src/log/logger");
        const log = createLogger({ level: "info", destination: pino.destination({ dest: 2, sync: false }) });
        const store = m.store && (await openStore(m.store, log));
        const fleet = new Fleet(store || new LeaseManager({ targetCooldownSeconds: 0 }), {
            setMembers() {},
            get: () => ({ state: "healthy" }),
        });
        const members = m.urls.map((url, index) => {
            const u = new URL(url);
            return {
                id: `bench-${index}`,
                pool: "bench",
                provider: "local",
                kind: "local" as const,
                index,
                host: u.hostname,
                port: Number(u.port),
                url,
                zone: "local",
            };
        });
        fleet.sync(members, [{ name: "bench", cooldownSeconds: 0 } as never]);
        // The publication is one script run after the next microtask (bench/synthetic-service.ts waits the same).
        if (store) await new Promise((r) => setTimeout(r, 500));
        const ready = () => (store ? store.ready() : ({ ok: true } as const));
        const gateway = new Gateway({
            port: 0,
            fleet,
            tokens: [{ name: "bench", sha256: sha256(m.token).toString("hex"), scopes: ["lease"] }],
            metrics: createMetrics().gateway,
            log,
            ready,
        });
        const { port } = await gateway.listen();
        process.once("SIGINT", () => process.exit(0)); // a normal exit, so --cpu-prof writes its profile
        process.send!({ port, readyPort: store ? await listenReadyz(ready) : 0 });
    });
}

/**
 * The floor: a bare TCP relay in front of the members (a connection to each in turn), no parsing, no
 * lease. What any proxy process in the path costs at the least: the gateway's rows are set beside it.
 */
export function runRelay(): void {
    process.once("message", (m: { urls: string[] }) => {
        const members = m.urls.map((u) => new URL(u));
        let next = 0;
        const server = net.createServer({ noDelay: true }, (client) => {
            const u = members[next++ % members.length];
            const member = net.connect({ host: u.hostname, port: Number(u.port), noDelay: true });
            client.pipe(member).pipe(client);
            client.on("error", () => member.destroy());
            member.on("error", () => client.destroy());
        });
        process.once("SIGINT", () => process.exit(0));
        server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as net.AddressInfo).port }));
    });
}
