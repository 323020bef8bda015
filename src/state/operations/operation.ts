/**
 * The record of one operation (one engine run) as clients, the control loops and the journal file see
 * it, with the parts heal, rotate, autoscale, rolling changes and drains fill in. Separate from
 * journal.ts (OperationLog: keeping, streaming and recovering these records) because most of the
 * service reads or fills in these shapes without touching the log itself.
 */

export type OperationStatus = "queued" | "running" | "succeeded" | "failed" | "interrupted";

/** Why a heal (src/service/control/heal) or rotate (src/service/control/rotate) operation replaces one member. */
export interface HealTarget {
    reason: "gone" | "unhealthy" | "age" | "blocked" | "changed";
    /** In words: "no process of local proxy … is running", "unhealthy for 312 s (limit 300 s); last: …". */
    detail: string;
}

/** One engine run as clients see it. Requests that arrive while it is queued join it (latest wins). */
export interface Operation {
    id: string;
    /**
     * `heal`: the reconcile loop replaces `members` (targeted refresh + replace), nothing else.
     * `autoscale`: the autoscaler (src/service/control/autoscale) set `desired`; `autoscale` says why.
     * `rotate`: the rotator (src/service/control/rotate) replaces `members` by age or blocks, behind surge members.
     */
    kind: "scale" | "up" | "heal" | "autoscale" | "rotate";
    status: OperationStatus;
    /** Desired replicas per pool this operation applies. */
    desired: Record<string, number>;
    /** How many client requests were folded into this operation. */
    requests: number;
    /**
     * Ids that followers answered scale requests with (cluster/scale-queue.ts) and that were folded into
     * this operation: GET /v1/operations/<any of them> finds it.
     */
    requestIds?: string[];
    createdAt: string;
    startedAt?: string;
    finishedAt?: string;
    changes?: Record<string, number>;
    /** After success: members per pool of `desired` in the stack outputs the update produced. */
    applied?: Record<string, number>;
    error?: string;
    /** `heal` and `rotate`: the members it replaces, and why each. */
    members?: string[];
    reasons?: Record<string, HealTarget>;
    /** `autoscale` decisions folded into this operation, per pool: the signals behind each. */
    autoscale?: Record<string, AutoscaleRecord>;
    /** `rotate` only: each member replaced, with the surge member that stood in and the egress IPs seen. */
    rotations?: RotationRecord[];
    /**
     * scale/up/autoscale whose update replaces members (a changed port, image, cloud-init): the rolling
     * change (src/service/control/rolling), the batch running now (1-based) of how many, in which pool.
     */
    rolling?: RollingRecord;
    /**
     * Set once the operation takes members away (scale-down; repair of unhealthy members): who drains
     * until when. `draining` is true while it waits for their leases, before the engine runs.
     */
    drain?: { draining: boolean; members: DrainView[] };
    /**
     * Set while a started operation waits for the stack's writer lock (an `egress up` beside the service
     * holds it): who holds it, since when. Nothing is applied until it ends, so a scale request cut off in
     * this wait is carried over like a queued one (OperationLog.recover).
     */
    waitingForLock?: { holder: string; since: string };
}

/** Where a rolling change is: batch `batch` of `of` replaces `members` of `pool`, behind `surge`. */
export interface RollingRecord {
    pool: string;
    /** The pool's count, kept throughout: a stop mid-roll restores it (rotate/run.ts countsToRestore). */
    replicas: number;
    batch: number;
    of: number;
    members: string[];
    surge: string[];
    /** Members replaced so far, all pools. */
    replaced: string[];
}

/** One autoscale decision as its operation records it (src/service/control/autoscale/decide.ts). */
export interface AutoscaleRecord {
    at: string;
    from: number;
    to: number;
    /** Members' worth of work behind it, and what the pool would have undamped. */
    demand: number;
    wanted: number;
    reasons: string[];
    /** The window's means: leased, healthy, utilization; refused requests summed. */
    signals: {
        leased: number;
        healthy: number;
        utilization: number;
        refusedLeases: number;
        refusedGateway: number;
        samples: number;
    };
}

/** One member a `rotate` operation replaces (src/service/control/rotate/run.ts fills it in as it goes). */
export interface RotationRecord {
    member: string;
    pool: string;
    /** `age`: past its rotateAfterSeconds; `blocked`: its rotateOnBlocks window tripped (`detail` says how). */
    reason: "age" | "blocked";
    /** When the member being replaced was created (when state knows; always for `age`), and when it was due (`age`, with its jitter). */
    createdAt?: string;
    dueAt?: string;
    /** `blocked`: "7 of 10 outcomes blocked in the last 300 s (ratio 0.5)". */
    detail?: string;
    /** The member added before the old one drained, and removed once its replacement was healthy. */
    surge?: string;
    /** Egress IPs the health probes saw (absent when no probe reported one): before and after the replace. */
    oldEgressIp?: string;
    newEgressIp?: string;
    /** Set once the replacement passed its health check. */
    replacedAt?: string;
    /** True when `newEgressIp` is one the pool's members had within its `ipMemorySeconds` (no fresh exit IP). */
    reusedIp?: boolean;
}

/** One member of an operation's drain (src/service/control/drain/plan.ts `DrainEntry`, times as ISO strings). */
export interface DrainView {
    member: string;
    reason: "scaled-down" | "replaced" | "gone";
    until: string;
    state: "waiting" | "idle" | "timed-out" | "kept";
}

/** The record of `id` among `ops`, or the one a request of that id was folded into (its `requestIds`). */
export function findOperation(ops: readonly Operation[] | undefined, id: string): Operation | undefined {
    return ops?.find((o) => o.id === id) ?? ops?.find((o) => o.requestIds?.includes(id));
}
