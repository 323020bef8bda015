/**
 * Lease+release load at an `egress serve` process, for the lease store's bad-day tests: `clients`
 * loops of POST /v1/leases then its release (a release refused 503 is retried: the lease is still in
 * the store when it is back). Counts every answer as "lease 201", "release 503 store_unavailable", …,
 * keeps the slowest answer and the last store_unavailable's Retry-After, and fails on the spot (the
 * assertion ends the loop's promise) on a 5xx that is not a deliberate 503.
 */
import assert from "node:assert/strict";
import type { ServeProcess } from "./processes";

export interface LeaseLoad {
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
    let slowest = 0;
    let retryAfter: string | undefined;
    let stopping = false;
    const timed = async (route: string, body: unknown) => {
        const t0 = Date.now();
        const r = await svc.call("POST", route, body);
        slowest = Math.max(slowest, Date.now() - t0);
        const code = r.body?.error?.code as string | undefined;
        const key = `${route === "/v1/leases" ? "lease" : "release"} ${r.status}${r.status >= 500 ? ` ${code}` : ""}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        if (r.status >= 500)
            assert.ok(DELIBERATE.includes(code ?? ""), `only deliberate 503s: ${r.status} ${JSON.stringify(r.body)}`);
        if (code === "store_unavailable") retryAfter = r.headers["retry-after"] as string;
        return r;
    };
    const client = async () => {
        while (!stopping) {
            const l = await timed("/v1/leases", { pool: o.pool, ttlSeconds: o.ttlSeconds ?? 60 });
            if (l.status !== 201) {
                await new Promise((r) => setTimeout(r, 50));
                continue;
            }
            while ((await timed(`/v1/leases/${l.body.lease.id}/release`, { outcome: "ok" })).status === 503)
                await new Promise((r) => setTimeout(r, 100));
        }
    };
    const loops = Array.from({ length: o.clients }, client);
    return {
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
