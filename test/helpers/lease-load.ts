/**
 * Lease+release load at an `egress serve` process, for the lease store's bad-day tests: `clients`
 * loops of POST /v1/leases then its release (a release refused 503 is retried: the lease is still in
 * the store when it is back). Counts every answer as "lease 201", "release 503 store_unavailable", …,
 * keeps the slowest answer and the last store_unavailable's Retry-After, and fails on the spot (the
 * assertion ends the loop's promise) on a 5xx that is not a deliberate 503.
 */
import assert from "node:assert/strict";
import type { ServeProcess } from "./processes";

/** One lease granted under load: its member, when the store says it began, and when the client let it go. */
export interface Grant {
    id: string;
    proxy: string;
    /** The store's clock (Redis TIME): epoch ms. */
    leasedAt: number;
    /** When the client sent its first release (epoch ms): it stops using the member then. */
    releasedAt?: number;
    /**
     * The last release's status, after the 503s retried: 404 when the store no longer had the lease (a
     * failover lost it, or an attempt whose answer was lost had released it).
     */
    releaseStatus?: number;
    /**
     * A release attempt went unanswered or was answered 503 before the last one: its write may have landed
     * before the reply was lost (a primary killed mid-reply), so a 404 after it is that attempt's doing,
     * not a lost grant.
     */
    ambiguous?: boolean;
}

/** A grant the store no longer had at its release, with every release attempt answered: lost for certain. */
export const lostGrant = (g: Grant): boolean => g.releaseStatus === 404 && !g.ambiguous;

export interface LeaseLoad {
    /** Every lease granted so far, in the order the answers arrived. */
    grants: Grant[];
    /** Answers so far by "<lease|release> <status>[ <error code>]". */
    seen: Map<string, number>;
    count(key: string): number;
    /** The slowest answer so far, in ms. */
    slowest(): number;
    /** Retry-After of the last store_unavailable answer. */
    retryAfter(): string | undefined;
    /** Keys of 5xx answers other than 503 store_unavailable / none_available (must stay empty). */
    otherFiveHundreds(): string[];
    /** Stops the loops and waits for them (rejects with the first failed assertion). */
    stop(): Promise<void>;
}

const DELIBERATE = ["store_unavailable", "none_available"];

export function leaseLoad(svc: ServeProcess, o: { clients: number; pool: string; ttlSeconds?: number }): LeaseLoad {
    const seen = new Map<string, number>();
    const grants: Grant[] = [];
    let slowest = 0;
    let retryAfter: string | undefined;
    let stopping = false;
    const timed = async (route: string, body: unknown) => {
        const t0 = Date.now();
        const r = await svc.call("POST", route, { body });
        slowest = Math.max(slowest, Date.now() - t0);
        const code = r.body?.error?.code as string | undefined;
        const key = `${route === "/v1/leases" ? "lease" : "release"} ${r.status}${r.status >= 500 ? ` ${code}` : ""}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        if (r.status >= 500)
            assert.ok(DELIBERATE.includes(code ?? ""), `only deliberate 503s: ${r.status} ${JSON.stringify(r.body)}`);
        if (code === "store_unavailable") retryAfter = r.headers.get("retry-after") ?? undefined;
        return r;
    };
    const client = async () => {
        while (!stopping) {
            const l = await timed("/v1/leases", { pool: o.pool, ttlSeconds: o.ttlSeconds ?? 60 });
            if (l.status !== 201) {
                await new Promise((r) => setTimeout(r, 50));
                continue;
            }
            const g: Grant = {
                id: l.body.lease.id,
                proxy: l.body.lease.proxy.id,
                leasedAt: Date.parse(l.body.lease.leasedAt),
            };
            grants.push(g);
            g.releasedAt = Date.now();
            let rel = await timed(`/v1/leases/${g.id}/release`, { outcome: "ok" });
            while (rel.status === 503) {
                g.ambiguous = true;
                await new Promise((r) => setTimeout(r, 100));
                rel = await timed(`/v1/leases/${g.id}/release`, { outcome: "ok" });
            }
            g.releaseStatus = rel.status;
        }
    };
    const loops = Array.from({ length: o.clients }, client);
    return {
        grants,
        seen,
        count: (k) => seen.get(k) ?? 0,
        slowest: () => slowest,
        retryAfter: () => retryAfter,
        otherFiveHundreds: () =>
            [...seen.keys()].filter((k) => / 5\d\d/.test(k) && !/ 503 (store_unavailable|none_available)$/.test(k)),
        async stop() {
            stopping = true;
            await Promise.all(loops);
        },
    };
}

/**
 * Pairs of grants that held the same member at once: [leasedAt, releasedAt) windows that overlap (a
 * grant not released yet runs to now). The window ends at the client's first release, so a release whose
 * answer was lost (a 503 after Redis ran it) cannot make one up.
 */
export function doubleLeases(grants: readonly Grant[], now = Date.now()): [Grant, Grant][] {
    const out: [Grant, Grant][] = [];
    const byProxy = new Map<string, Grant[]>();
    for (const g of grants) byProxy.set(g.proxy, [...(byProxy.get(g.proxy) ?? []), g]);
    for (const list of byProxy.values()) {
        const sorted = [...list].sort((a, b) => a.leasedAt - b.leasedAt);
        for (let i = 0; i < sorted.length; i++)
            for (let j = i + 1; j < sorted.length && sorted[j].leasedAt < (sorted[i].releasedAt ?? now); j++)
                out.push([sorted[i], sorted[j]]);
    }
    return out;
}
