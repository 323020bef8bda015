/**
 * The Redis lease store's wire format, both ways: the pool settings it publishes for the scripts
 * (scripts.ts PUBLISH) and the decoding of the ACQUIRE and RELEASE scripts' replies into the lease
 * store's answers. Separate from redis-store.ts (the connection, publishing and the local view) because
 * these are pure functions of the scripts' array layouts, which change together with scripts.ts.
 */
import type { PoolLeaseSettings } from "../leases";
import {
    selectorOf,
    type AcquireRequest,
    type AcquireResult,
    type Lease,
    type ReleaseResult,
    type Removal,
} from "../leases/types";
import { orderRules } from "../../model/politeness";
import { memberConcurrencyOf } from "../leases/shared";
import type { Reply } from "./redis-options";

/**
 * One pool as published: cooldown ms, session TTL ms, rest after `ok` ms (-1: the store's default),
 * politeness rules `[host, maxConcurrency, minIntervalMs]` in match order, member concurrency.
 */
export type PublishedPool = [number, number, number, [string, number, number][], number];

/** The pools' lease settings as the scripts read them; `sessionTtl`: seconds, for pools that set none. */
export function publishedPools(
    pools: Record<string, PoolLeaseSettings>,
    sessionTtl: number,
): Record<string, PublishedPool> {
    return Object.fromEntries(
        Object.entries(pools).map(([n, c]) => [
            n,
            [
                Math.max(0, c.cooldownSeconds) * 1000,
                Math.max(0, c.sessionTtlSeconds ?? sessionTtl) * 1000,
                c.restAfterOkSeconds === undefined ? -1 : c.restAfterOkSeconds * 1000,
                orderRules(c.targets ?? []).map((r) => [r.host, r.maxConcurrency ?? 0, r.minIntervalMs ?? 0]),
                memberConcurrencyOf(c),
            ],
        ]),
    );
}

/** The ACQUIRE script's ARGV for `req` (scripts.ts ACQUIRE lists them), with lease id `id`. */
export function acquireArgs(req: AcquireRequest, id: string): string[] {
    return [
        req.pool ?? "",
        req.target ?? "",
        req.session ?? "",
        String(req.ttlSeconds ?? 0),
        id,
        labelLines(selectorOf(req)),
        (req.shared ? "s" : "") + (req.strict ? "t" : "") + (req.rotate ? "r" : ""),
        req.replaces?.leaseId ?? "",
        req.replaces?.outcome ?? "",
        req.sessionTtlSeconds === undefined ? "" : String(req.sessionTtlSeconds),
        ...(req.exclude ?? []),
    ];
}

/** The ACQUIRE script's reply to `req` as the lease store's answer. */
export function acquireReply(r: Reply, req: AcquireRequest): AcquireResult {
    if (r[0] === 0 && r[1] === "target-busy")
        return {
            ok: false,
            reason: "target-busy",
            retryAfterSeconds: Number(r[2]),
            pool: String(r[3]),
            rule: String(r[4]),
        };
    if (r[0] === 0 && r[1] === "session-gone")
        return { ok: false, reason: "session-gone", member: String(r[3]), retryAfterSeconds: 0 };
    if (r[0] === 0)
        return { ok: false, reason: r[1] as "no-members" | "none-available", retryAfterSeconds: Number(r[2]) };
    const lease: Lease = {
        id: String(r[1]),
        proxyId: String(r[2]),
        pool: String(r[3]),
        ...(req.target !== undefined && { target: req.target }),
        ...(req.session !== undefined && { session: req.session }),
        leasedAt: Number(r[4]),
        expiresAt: Number(r[5]),
    };
    const state = String(r[6]);
    return state === ""
        ? { ok: true, lease }
        : { ok: true, lease, rebound: state === "rebound", session: state as "kept" | "rebound" | "new" };
}

/** The RELEASE script's reply for lease `leaseId` as the lease store's answer. */
export function releaseReply(r: Reply, leaseId: string): ReleaseResult {
    if (r[0] === 0) {
        if (r[1] === "unknown-lease") return { ok: false, reason: "unknown-lease" };
        const t = JSON.parse(String(r[2])) as {
            cause: "ttl" | "member-removed";
            endedAt: number;
            removal?: Removal;
        };
        return {
            ok: false,
            reason: "expired",
            cause: t.cause,
            endedAt: t.endedAt,
            ...(t.removal && { removal: t.removal }),
        };
    }
    const lease: Lease = {
        id: leaseId,
        proxyId: String(r[1]),
        pool: String(r[2]),
        ...(r[3] !== "" && { target: String(r[3]) }),
        ...(r[4] !== "" && { session: String(r[4]) }),
        leasedAt: Number(r[5]),
        expiresAt: Number(r[6]),
    };
    return { ok: true, lease, errors: Number(r[7]) };
}

/**
 * Labels (or a selector) as the Lua scripts read them: sorted `k=v` lines, each between newlines
 * ("\\nk=v\\n"), '' for none. Sorted, so one member's string is the same on every publication.
 */
export function labelLines(pairs: Iterable<readonly [string, string]>): string {
    const lines = [...pairs].map(([k, v]) => `${k}=${v}`).sort();
    return lines.length === 0 ? "" : `\n${lines.join("\n")}\n`;
}
