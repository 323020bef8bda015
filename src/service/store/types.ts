import type { LeaseMemberInput, PoolLeaseSettings } from "../leases";
import type { AcquireRequest, AcquireResult, Lease, ReleaseOutcome, ReleaseResult, Removal } from "../leases/types";

/** A value now (the memory store) or later (a store across the network). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * `f(v)`, at once when `v` is a plain value, else when it resolves. The memory store stays synchronous
 * through it (same turn, same speed as before the seam); the Redis store's answers arrive later.
 */
export function settle<T, R>(v: MaybePromise<T>, f: (t: T) => R): MaybePromise<R> {
    return v instanceof Promise ? v.then(f) : f(v);
}

/**
 * Where the serving state of leases lives: the seam under Fleet. `LeaseManager` (in memory, one
 * process) fits it as it is; `RedisLeaseStore` keeps the same state in Redis so a restart or another
 * replica loses nothing. The decisions that must be exclusive (acquire, release, revoke, a block report)
 * are the store's; the sync reads (isLeased, active, sessionMember) may lag a Redis store by a second.
 */
export interface LeaseStore {
    setMembers(members: readonly LeaseMemberInput[], pools: Record<string, PoolLeaseSettings>): void;
    setEligible(id: string, eligible: boolean): boolean;
    acquire(req: AcquireRequest): MaybePromise<AcquireResult>;
    release(leaseId: string, outcome: ReleaseOutcome): MaybePromise<ReleaseResult>;
    revoke(id: string, removal: Removal): Lease | undefined;
    reportBlocked(proxyId: string, target: string): MaybePromise<number | undefined>;
    isLeased(id: string): boolean;
    /** Re-reads what other replicas granted or released, for the sync reads; absent: they are always current. */
    syncView?(): Promise<void>;
    active(): Lease[];
    sessionMember(session: string, pool?: string): string | undefined;
    sweep(): unknown;
}

/** `v` itself, for callers that know they hold the memory store (benches, unit tests): a promise is a mistake. */
export function immediate<T>(v: MaybePromise<T>): T {
    if (v instanceof Promise) throw new Error("expected a synchronous answer from the memory store, got a promise");
    return v;
}
