/** Public shapes of the lease manager. Times are epoch milliseconds from the injected clock. */
import { SESSION_TTL_DEFAULT_SECONDS, type PolitenessRule } from "../../model";

export type ReleaseOutcome = "ok" | "blocked" | "error";

export interface Lease {
    /** Opaque lease id (a UUID by default). */
    readonly id: string;
    readonly proxyId: string;
    readonly pool: string;
    /** Host the crawler said it would visit, when it said so. */
    readonly target?: string;
    /** The sticky session it was taken through, when the request named one. */
    readonly session?: string;
    readonly leasedAt: number;
    readonly expiresAt: number;
}

export interface AcquireRequest {
    /** Only lease from this pool; otherwise the least recently used member of any pool. */
    pool?: string;
    /** Enables per-target cooldown for this lease. */
    target?: string;
    /** Clamped to [1, maxTtlSeconds]; defaults to defaultTtlSeconds. */
    ttlSeconds?: number;
    /**
     * Sticky session key (scoped to `pool`, or to "any pool" without one): its leases go to the same
     * member while that member is eligible (healthy, not draining), unleased and not blocked by
     * `target`; otherwise the session moves to the member an ordinary acquire would pick.
     */
    session?: string;
    /**
     * Only members in this zone (the member's `zone`, e.g. a GCE zone or a KVM host's). Checked against
     * the pools' zones by the fleet first (an unknown zone is the caller's mistake); here a member of
     * another zone is simply passed over, and a session bound to one moves.
     */
    zone?: string;
    /**
     * Only members whose labels (LeaseMemberInput.labels) have every `label: value` here; `zone` above is
     * the same as `where.zone`. Checked against the labels members have had by the fleet first (an unknown
     * label or value is the caller's mistake); here non-matching members are passed over, a session moves.
     */
    where?: Readonly<Record<string, string>>;
    /** The session's idle lifetime, clamped to its pool's session TTL (which it can only shorten). */
    sessionTtlSeconds?: number;
    /**
     * A session whose member is gone (no longer in the stack, or not eligible: unhealthy, draining) is
     * answered `session-gone` instead of moving; one whose member is only busy answers `none-available`.
     */
    strict?: boolean;
    /** A session moves to a member other than its current one now (as if that one were in `exclude`). */
    rotate?: boolean;
    /**
     * Members (ids) not to lease now: the gateway's retry asks for a member other than the ones that
     * already failed this request. A session bound to one of them moves, as if its member were busy.
     */
    exclude?: readonly string[];
    /**
     * A gateway request: it shares its member with the pool's other gateway requests, up to the pool's
     * `memberConcurrency` (least-loaded member first). A plain acquire (POST /v1/leases) is exclusive:
     * it never goes to a member carrying shared leases, and a member under it carries none.
     */
    shared?: boolean;
    /**
     * A gateway retry: the failed attempt's lease, ended with `outcome` in the same step as this acquire
     * and before its pick, so the attempt's politeness slot (the site's `maxConcurrency`) is free for
     * the retry and no other request can take it in between. The failed member stays out through
     * `exclude`. An unknown or ended lease is passed over.
     */
    replaces?: { leaseId: string; outcome: ReleaseOutcome };
}

export type AcquireResult = AcquireAnswer & {
    /** With `replaces`: the lease this acquire ended, when it was still live. */
    replaced?: Lease;
};

type AcquireAnswer =
    /** `rebound` (only with a session): true when the session moved off the member it was bound to. */
    | {
          ok: true;
          lease: Lease;
          rebound?: boolean;
          /** With a session, from a store that knows it in the same step (Redis): kept its member, moved, or new. */
          session?: "kept" | "rebound" | "new";
      }
    /**
     * `no-members`: the pool (or the whole stack) has no members at all — scale it up (HTTP 503 too,
     * or 404 if the route knows the pool is not configured). `none-available`: members exist but every
     * one is leased, cooling, unhealthy or resting for this target. Either way Retry-After =
     * `retryAfterSeconds` (whole seconds, ≥ 1).
     */
    | { ok: false; reason: "no-members" | "none-available"; retryAfterSeconds: number }
    /**
     * Only the pool's per-site politeness (`targets`) stops a grant: the site `rule` (the matching rule's
     * host) has its `maxConcurrency` leases in flight in `pool`, or the free members were granted for it
     * less than `minIntervalMs` ago. HTTP 429 `target_busy` with Retry-After.
     */
    | { ok: false; reason: "target-busy"; retryAfterSeconds: number; pool: string; rule: string }
    /** A `strict` session's member is gone (AcquireRequest.strict): the gateway's 502 `session_gone`. */
    | { ok: false; reason: "session-gone"; member: string; retryAfterSeconds: number };

export type ReleaseResult =
    /** `errors`: the member's lease-error count so far (the health engine gets each via `onError`). */
    | { ok: true; lease: Lease; errors: number }
    /** Never issued, already released, or forgotten (tombstones last `tombstoneSeconds`): HTTP 404. */
    | { ok: false; reason: "unknown-lease" }
    /**
     * The lease ended before this release (its TTL ran out, or its member left the stack): HTTP 410.
     * `removal` says why the member left when the service ended the lease on purpose (`revoke`).
     */
    | { ok: false; reason: "expired"; cause: "ttl" | "member-removed"; endedAt: number; removal?: Removal };

/** Why the service took a leased member away (a drain that ran out, a repair): kept for late releases. */
export interface Removal {
    reason: "scaled-down" | "replaced" | "gone";
    member: string;
    /** In words, naming the member: "member web-2 was scaled away (pool web scaled to 2) …". */
    message: string;
}

export type MemberLeaseState = "available" | "leased" | "cooldown" | "ineligible";

export interface MemberSnapshot {
    id: string;
    pool: string;
    /** `leased` wins over `ineligible`: a member that turns unhealthy mid-lease stays leased until released. */
    state: MemberLeaseState;
    eligible: boolean;
    /** When its last lease ended; undefined when never leased. */
    lastUsedAt?: number;
    leaseId?: string;
    /** End of pool cooldown, when state is `cooldown`. */
    availableAt?: number;
    /** Lease errors reported against it (outcome `error`). */
    errors: number;
}

export interface PoolStats {
    members: number;
    available: number;
    leased: number;
    cooldown: number;
    ineligible: number;
}

export interface LeaseManagerOptions {
    /** Clock in epoch ms; inject a fake one in tests. @default Date.now */
    now?: () => number;
    /** Lease id generator. @default crypto.randomUUID */
    newLeaseId?: () => string;
    /** @default 300 */
    defaultTtlSeconds?: number;
    /** Longer requests are clamped to it (the HTTP schema already refuses them). @default 3600 */
    maxTtlSeconds?: number;
    /**
     * Rest per (proxy, target) after an `ok`/`error` release or expiry. @default 0: least-recently-used
     * already spreads a site over the members, and a rest after every answer capped one site at N
     * requests per rest through N members (docs/decisions/0060-member-concurrency.md). Rests after `blocked` are separate.
     */
    targetCooldownSeconds?: number;
    /** First `blocked` cooldown; doubles per consecutive block. @default 60 */
    blockedBaseSeconds?: number;
    /** Cap of the doubling. @default 3600 */
    blockedMaxSeconds?: number;
    /**
     * Retry-After when every candidate is leased: leases are usually returned well before their TTL,
     * so this is short (raised to the pool cooldown, which any returned member serves first). @default 1
     */
    busyRetryAfterSeconds?: number;
    /** Retry-After when nothing will become available by itself (no members, all unhealthy). @default 30 */
    idleRetryAfterSeconds?: number;
    /** Whether members start leasable before the health engine has spoken. @default false */
    initiallyEligible?: boolean;
    /** How long ended leases are remembered so a late release gets `expired` (410), not 404. @default 3600 */
    tombstoneSeconds?: number;
    /** Cap on remembered ended leases (oldest dropped first). @default 100000 */
    maxTombstones?: number;
    /** Idle seconds after which a session is forgotten, for pools whose config does not say. @default 1800 */
    sessionTtlSeconds?: number;
    /** Cap on remembered sessions (the one idle longest is dropped first). @default 100000 */
    maxSessions?: number;
    /** Called for every release with outcome `error` — wire it to `HealthMonitor.reportLeaseError`. */
    onError?: (proxyId: string, lease: Lease) => void;
}

/** The defaults, exported so routes and docs quote the same numbers. */
export const LEASE_DEFAULTS = {
    defaultTtlSeconds: 300,
    maxTtlSeconds: 3600,
    targetCooldownSeconds: 0,
    blockedBaseSeconds: 60,
    blockedMaxSeconds: 3600,
    busyRetryAfterSeconds: 1,
    idleRetryAfterSeconds: 30,
    tombstoneSeconds: 3600,
    maxTombstones: 100_000,
    /** The stack config's default, for managers (benches, tests) that get no pool config. */
    sessionTtlSeconds: SESSION_TTL_DEFAULT_SECONDS,
    maxSessions: 100_000,
} as const;

/** One entry of `setMembers`: stack-output members fit as they are (extra fields are ignored). */
export interface LeaseMemberInput {
    id: string;
    pool: string;
    /** Health verdict known at the time, e.g. `monitor.get(id)?.state === "healthy"`. */
    eligible?: boolean;
    /** The member's zone, for `AcquireRequest.zone`; "" or absent when its kind has none. */
    zone?: string;
    /** Its labels (pool config, then the kind's), for `AcquireRequest.where`; `zone` is added from the field above. */
    labels?: Readonly<Record<string, string>>;
}

/** Per-pool lease settings of `setMembers` (PoolConfig fits). */
export interface PoolLeaseSettings {
    cooldownSeconds: number;
    /** Rest per (member, target) after an `ok`/`error` lease in this pool; the store's targetCooldownSeconds when absent. */
    restAfterOkSeconds?: number;
    /** Per-site politeness rules (src/model/politeness.ts). */
    targets?: readonly PolitenessRule[];
    /** Session idle TTL for this pool; the manager's `sessionTtlSeconds` when absent. */
    sessionTtlSeconds?: number;
    /** Shared (gateway) leases one member carries at once (`gateway.memberConcurrency`); 1 when absent. */
    memberConcurrency?: number;
}

/**
 * The member selector of a request as `[label, value]` pairs: `where`, and `zone` as the `zone` label.
 * Empty when the request selects nothing. Each member check costs O(pairs), whatever the member count.
 */
export function selectorOf(req: Pick<AcquireRequest, "zone" | "where">): [string, string][] {
    const pairs = Object.entries(req.where ?? {});
    if (req.zone !== undefined && req.where?.zone === undefined) pairs.push(["zone", req.zone]);
    return pairs;
}

/** A member's labels as the stores match them: its own, with its zone (when it has one) as `zone`. */
export function memberLabels(m: Pick<LeaseMemberInput, "zone" | "labels">): Record<string, string> {
    return { ...m.labels, ...(m.zone ? { zone: m.zone } : {}) };
}
