import { HeapItem, MinHeap } from "./heap";
import { ListNode, ReadyList } from "./ready-list";
import { newPoolPoliteness, type PoolPoliteness } from "./politeness";
import type { SessionRec } from "./sessions";
import type { Lease } from "./types";

/** `lastUsedAt` of a member never leased: sorts before every real time, and never cools. */
export const NEVER = -Infinity;

/** The manager's record of one member. `lastUsedAt` is when its last lease ended. */
export interface MemberRec extends ListNode, HeapItem {
    id: string;
    pool: PoolRec;
    eligible: boolean;
    /** For zone-scoped acquires ("" when the member has none). */
    zone: string;
    /** Its labels, `zone` among them (types.ts memberLabels): what `AcquireRequest.where` selects by. */
    labels: Record<string, string>;
    /** Its exclusive lease (POST /v1/leases), if any. */
    lease: LeaseRec | undefined;
    /** Its shared (gateway) leases: at most the pool's memberConcurrency, none while `lease` is set. */
    shared: Set<LeaseRec>;
    errors: number;
}

/** An active lease; `heapIndex` is its slot in the manager's expiry heap. */
export interface LeaseRec extends HeapItem {
    lease: Lease;
    member: MemberRec;
    /** The sticky session it was taken through, if any. */
    session?: SessionRec;
    /** The politeness rule (host) it counts under in its pool, if its target matched one. */
    rule?: string;
    /** A gateway lease: one of its member's `shared`, not its `lease`. */
    shared?: boolean;
}

/**
 * Each eligible, unleased member of a pool is in exactly one of `ready` (LRU list) or `cooling` (min-heap
 * on `lastUsedAt`; with one cooldown per pool that is also the order they become available in).
 * An eligible member carrying shared leases with room for more is in `sharing` (shared.ts); leased,
 * full and ineligible members are in none: they cost nothing on the acquire path.
 */
export interface PoolRec {
    name: string;
    cooldownMs: number;
    /** Idle time after which a session bound to one of its members is forgotten. */
    sessionTtlMs: number;
    /** Listed in the latest pool config: kept (answering `no-members`) even when empty. */
    configured: boolean;
    ready: ReadyList<MemberRec>;
    cooling: MinHeap<MemberRec>;
    /** Members carrying shared leases with room for another (fewer than memberConcurrency). */
    sharing: Set<MemberRec>;
    /** Shared leases one member carries at once (`gateway.memberConcurrency`). */
    memberConcurrency: number;
    members: number;
    /** Live leases in the pool, exclusive and shared. */
    leased: number;
    /** Per-site politeness (the pool's `targets`). */
    polite: PoolPoliteness;
    /** The pool's `restAfterOkSeconds` in ms; undefined = the manager's targetCooldownSeconds. */
    restAfterOkMs?: number;
}

export function newPool(name: string, sessionTtlMs: number): PoolRec {
    // Same cooldown for the whole pool, so ordering by lastUsedAt is ordering by end of cooldown.
    return {
        name,
        cooldownMs: 0,
        sessionTtlMs,
        configured: false,
        ready: new ReadyList<MemberRec>(),
        cooling: new MinHeap<MemberRec>((m) => m.lastUsedAt),
        sharing: new Set<MemberRec>(),
        memberConcurrency: 1,
        members: 0,
        leased: 0,
        polite: newPoolPoliteness(),
    };
}

/** A member new to the manager: never leased, so first in LRU order among its equals. */
export function newMember(id: string, pool: PoolRec, seq: number, eligible: boolean, zone = ""): MemberRec {
    return {
        id,
        pool,
        seq,
        eligible,
        zone,
        labels: zone ? { zone } : {},
        lease: undefined,
        shared: new Set<LeaseRec>(),
        errors: 0,
        lastUsedAt: NEVER,
        prev: undefined,
        next: undefined,
        inList: false,
        heapIndex: -1,
    };
}

/**
 * Puts an unleased, eligible member where it belongs: cooling or ready — or, carrying shared leases,
 * `sharing` while it has room for another. A no-op for anything else.
 */
export function place(m: MemberRec, now: number): void {
    if (m.lease || !m.eligible) return;
    if (m.shared.size > 0) {
        if (m.shared.size < m.pool.memberConcurrency) m.pool.sharing.add(m);
        else m.pool.sharing.delete(m);
        return;
    }
    m.pool.sharing.delete(m);
    if (m.inList || m.heapIndex >= 0) return;
    if (m.lastUsedAt + m.pool.cooldownMs > now) m.pool.cooling.push(m);
    else m.pool.ready.insert(m);
}

/** Takes a member out of both structures (it became ineligible or left the stack). */
export function unplace(m: MemberRec): void {
    m.pool.ready.remove(m);
    m.pool.cooling.remove(m);
    m.pool.sharing.delete(m);
}

/** Whether the member carries any lease, exclusive or shared ("leased" in stats and discovery). */
export function inUse(m: MemberRec): boolean {
    return m.lease !== undefined || m.shared.size > 0;
}

/** Moves members whose pool cooldown has ended to the ready list. Amortized O(log n) per release. */
export function promote(p: PoolRec, now: number): void {
    for (let top = p.cooling.peek(); top && top.lastUsedAt + p.cooldownMs <= now; top = p.cooling.peek()) {
        p.cooling.pop();
        p.ready.insert(top);
    }
}

/** New pool cooldown: re-sort its idle members (rare, O(n log n)). */
export function rebuild(p: PoolRec, cooldownMs: number, now: number): void {
    const idle = [...p.ready.clear(), ...p.cooling.clear()].sort(
        (a, b) => a.lastUsedAt - b.lastUsedAt || a.seq - b.seq,
    );
    p.cooldownMs = cooldownMs;
    for (const m of idle) place(m, now);
}

/**
 * Whether member `m` has room for this acquire, apart from the session's other rules (pick.ts
 * sessionSticks): an exclusive acquire needs it free of any lease; a shared one needs it free of an
 * exclusive lease and below the pool's memberConcurrency.
 */
export function hasRoom(m: MemberRec, shared: boolean | undefined): boolean {
    if (m.lease) return false;
    return shared ? m.shared.size < m.pool.memberConcurrency : m.shared.size === 0;
}
