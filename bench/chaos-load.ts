/**
 * The load of bench/chaos.ts: crawlers and an orchestrator talking to whichever `egress serve` replica is
 * up, as behind a load balancer (a refused connection is tried on another replica):
 * - lease clients: POST /v1/leases then its release (a release answered 503 or not at all is sent again,
 *   to any replica, until the store answers it);
 * - gateway clients: GET through a replica's gateway to a loopback origin;
 * - an operator: PUT /v1/pools/web/replicas to a random count every `scaleEveryMs`.
 * Every answer is counted by "<what> <status>[ <error code>]"; grants are kept for the double-lease count.
 */
import type { Grant } from "../test/helpers/lease-load";
import { proxyBasicAuth, requestViaProxy } from "../test/helpers/net";
import { ADMIN_TOKEN, type ServeProcess } from "../test/helpers/processes";
import { sleep } from "../test/helpers/harness";

/** A replica slot: its fixed ports, and its process while it runs. */
export interface Slot {
    name: string;
    apiPort: number;
    gatewayPort: number;
    svc?: ServeProcess;
}

export interface ChaosLoad {
    grants: Grant[];
    /** Answers by "<lease|release|gateway|scale> <status>[ <code>]"; "… unreachable" for a refused connection. */
    seen: Map<string, number>;
    /** Operation ids the operator's scales were answered with (202). */
    operations: string[];
    /** Each gateway 5xx other than 503, with its time and replica: to find its minute in that replica's log. */
    incidents: string[][];
    stop(): Promise<void>;
}

const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(Math.random() * xs.length)];

export function chaosLoad(
    slots: Slot[],
    o: { leaseClients: number; gatewayClients: number; originPort: number; scaleEveryMs: number; maxReplicas: number },
): ChaosLoad {
    const seen = new Map<string, number>();
    const grants: Grant[] = [];
    const operations: string[] = [];
    const incidents: string[][] = [];
    let stopping = false;
    const count = (key: string) => seen.set(key, (seen.get(key) ?? 0) + 1);
    const live = () => slots.filter((s) => s.svc && s.svc.child.exitCode === null && s.svc.child.signalCode === null);

    /** An API call to a live replica: undefined when none is up or the connection failed (counted). */
    const call = async (what: string, method: string, route: string, body?: unknown) => {
        const s = pick(live());
        if (!s?.svc) {
            count(`${what} unreachable`);
            return undefined;
        }
        try {
            const r = await s.svc.call(method, route, { body });
            count(`${what} ${r.status}${r.status >= 400 ? ` ${r.body?.error?.code ?? ""}` : ""}`.trimEnd());
            return r;
        } catch {
            count(`${what} unreachable`);
            return undefined;
        }
    };
    const release = async (g: Grant) => {
        g.releasedAt = Date.now();
        for (;;) {
            const r = await call("release", "POST", `/v1/leases/${g.id}/release`, { outcome: "ok" });
            if (r && r.status !== 503) return void (g.releaseStatus = r.status);
            // No answer, or a 503 whose write may have landed before the reply was lost: a 404 next is ours.
            g.ambiguous = true;
            await sleep(100);
        }
    };
    const leaseClient = async () => {
        while (!stopping) {
            const l = await call("lease", "POST", "/v1/leases", { pool: "web", ttlSeconds: 60 });
            if (l?.status !== 201) {
                await sleep(50);
                continue;
            }
            const g: Grant = {
                id: l.body.lease.id,
                proxy: l.body.lease.proxy.id,
                leasedAt: Date.parse(l.body.lease.leasedAt),
            };
            grants.push(g);
            await sleep(20); // the crawler's request through the member
            await release(g);
        }
    };
    const gatewayClient = async () => {
        const auth = proxyBasicAuth("web", ADMIN_TOKEN);
        while (!stopping) {
            const s = pick(live());
            if (!s) {
                count("gateway unreachable");
                await sleep(100);
                continue;
            }
            try {
                const r = await requestViaProxy(s.gatewayPort, `http://127.0.0.1:${o.originPort}/page`, auth, 15_000);
                count(`gateway ${r.status}${r.status >= 500 ? ` ${String(r.headers["proxy-status"] ?? "")}` : ""}`);
                if (r.status >= 500 && r.status !== 503)
                    incidents.push([
                        new Date().toISOString().slice(11, 23),
                        s.name,
                        String(r.status),
                        String(r.headers["x-egress-attempts"] ?? "-"),
                        String(r.headers["proxy-status"] ?? ""),
                    ]);
                if (r.status !== 200) await sleep(50);
            } catch {
                count("gateway unreachable");
                await sleep(100);
            }
        }
    };
    const operator = async () => {
        while (!stopping) {
            for (const until = Date.now() + o.scaleEveryMs; !stopping && Date.now() < until;) await sleep(500);
            if (stopping) break;
            const replicas = 3 + Math.floor(Math.random() * (o.maxReplicas - 2));
            const r = await call("scale", "PUT", "/v1/pools/web/replicas", { replicas });
            if (r?.status === 202 && r.body.operation?.id) operations.push(r.body.operation.id);
        }
    };
    const loops = [
        ...Array.from({ length: o.leaseClients }, leaseClient),
        ...Array.from({ length: o.gatewayClients }, gatewayClient),
        operator(),
    ];
    return {
        grants,
        seen,
        operations,
        incidents,
        async stop() {
            stopping = true;
            await Promise.all(loops);
        },
    };
}
