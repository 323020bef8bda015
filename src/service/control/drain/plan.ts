/**
 * Drain decisions as pure functions: which members an operation takes away, and, given who still holds
 * a lease and the time, which of them are done, still waiting, or due to have their lease ended. The
 * drainer (drainer.ts) does the waiting and the side effects; tests drive these directly.
 */
import type { Removal } from "../../leases";
import type { HealTarget } from "../../../state/operations/operation";

/** A member an operation is about to remove (scale-down) or replace (repair of an unhealthy member). */
export interface DrainTarget {
    member: string;
    pool: string;
    reason: Removal["reason"];
    /** Why, in words, for the lease holder's 410: "member web-2 was scaled away (pool web scaled to 2)". */
    message: string;
}

/**
 * One member's drain as /v1/operations shows it. `waiting`: a lease still runs; `idle`: no lease, the
 * member goes when the drain ends; `timed-out`: its lease was ended at `until`; `kept`: a later request
 * keeps the member (a scale-up during a scale-down's drain), so it is leasable again.
 */
export interface DrainEntry extends DrainTarget {
    /** Epoch ms when a lease still running is ended regardless: start + the pool's drainSeconds. */
    until: number;
    state: "waiting" | "idle" | "timed-out" | "kept";
}

export interface DrainStep {
    entries: DrainEntry[];
    /** Entries whose lease is to be ended now (they ran past `until`). */
    revoke: DrainEntry[];
    /** Entries that stopped draining this step (kept). */
    kept: DrainEntry[];
    /** Nothing is waiting: the operation may go on. */
    done: boolean;
}

/**
 * One step: `targets` is what the operation takes away now (it may have changed since `prev`: a scale
 * request folded in), `leased` says who holds a lease. A member keeps the deadline it got when it
 * started draining; one that comes back after being kept starts over.
 */
export function stepDrain(
    prev: readonly DrainEntry[],
    targets: readonly DrainTarget[],
    leased: (id: string) => boolean,
    now: number,
    drainMs: (pool: string) => number,
): DrainStep {
    const before = new Map(prev.map((e) => [e.member, e]));
    const wanted = new Set(targets.map((t) => t.member));
    const entries: DrainEntry[] = [];
    const revoke: DrainEntry[] = [];
    const kept: DrainEntry[] = [];
    for (const t of targets) {
        const old = before.get(t.member);
        const until = old && old.state !== "kept" ? old.until : now + drainMs(t.pool);
        const wasTimedOut = old?.state === "timed-out";
        const e: DrainEntry = { ...t, until, state: "idle" };
        if (leased(t.member)) {
            if (now >= until) {
                e.state = "timed-out";
                revoke.push(e);
            } else e.state = "waiting";
        } else if (wasTimedOut) e.state = "timed-out";
        entries.push(e);
    }
    for (const e of prev) {
        if (wanted.has(e.member)) continue;
        if (e.state !== "kept") kept.push({ ...e, state: "kept" });
        entries.push({ ...e, state: "kept" });
    }
    return { entries, revoke, kept, done: !entries.some((e) => e.state === "waiting") };
}

/**
 * Members an `up` with these pool counts deletes: a member `<pool>-<i>` exists for i < replicas, so
 * every member at or above its pool's count goes, and so do members of pools no longer configured.
 */
export function scaleDownTargets(
    members: readonly { id: string; pool: string; index: number }[],
    counts: Readonly<Record<string, number>>,
): DrainTarget[] {
    const out: DrainTarget[] = [];
    for (const m of members) {
        const n = counts[m.pool];
        if (n !== undefined && m.index < n) continue;
        const why = n === undefined ? `pool ${m.pool} was removed from the config` : `pool ${m.pool} scaled to ${n}`;
        out.push({
            member: m.id,
            pool: m.pool,
            reason: "scaled-down",
            message: `member ${m.id} was scaled away (${why})`,
        });
    }
    return out;
}

/**
 * The members a heal or rotation replaces that still serve drain first: unhealthy ones and those rotated by
 * age (gone ones are replaced at once: they serve nothing).
 */
export function healDrainTargets(
    members: readonly { id: string; pool: string }[],
    reasons: Readonly<Record<string, { reason: HealTarget["reason"]; detail: string }>>,
): DrainTarget[] {
    return members
        .filter((m) => reasons[m.id] && reasons[m.id].reason !== "gone")
        .map((m) => ({
            member: m.id,
            pool: m.pool,
            reason: "replaced",
            message: `member ${m.id} was replaced (${reasons[m.id].detail})`,
        }));
}

/** Gone members a heal replaces: no drain, their leases end at once with reason `gone`. */
export function healGoneTargets(
    members: readonly { id: string; pool: string }[],
    reasons: Readonly<Record<string, { reason: HealTarget["reason"]; detail: string }>>,
): DrainTarget[] {
    return members
        .filter((m) => reasons[m.id]?.reason === "gone")
        .map((m) => ({
            member: m.id,
            pool: m.pool,
            reason: "gone",
            message: `member ${m.id} was gone (${reasons[m.id].detail}) and is being replaced`,
        }));
}
