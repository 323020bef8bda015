import type { ProbeResult } from "./probe";

export type HealthState = "unknown" | "healthy" | "unhealthy";

/**
 * How many consecutive signals flip a member. Defaults, and why:
 * - `initialSuccessThreshold` 1: a new member serves as soon as one probe went through — scale-ups
 *   should pay off within one probe, and a member that never worked has nothing to flap from.
 * - `successThreshold` 2: an unhealthy member needs two good probes in a row to come back, so a proxy
 *   that fails every other request does not oscillate in and out of the lease pool.
 * - `failureThreshold` 2: one lost probe (a dropped packet, a GC pause) does not pull a working proxy;
 *   two in a row do. Applies from `unknown` too, so a member that never comes up is reported.
 * A lease released with outcome `error` counts as one failure (the crawler saw the proxy fail), and a
 * successful probe clears it; so two lease errors with no good probe between them mark it unhealthy.
 */
export interface HealthThresholds {
    initialSuccessThreshold: number;
    successThreshold: number;
    failureThreshold: number;
}

export const DEFAULT_THRESHOLDS: HealthThresholds = {
    initialSuccessThreshold: 1,
    successThreshold: 2,
    failureThreshold: 2,
};

export interface Transition {
    id: string;
    from: HealthState;
    to: HealthState;
    /** Why, in words: "2 consecutive failures; last: GET through proxy …: ECONNREFUSED". */
    reason: string;
    /** Epoch ms. */
    at: number;
}

/** What discovery and `egress doctor` show for one member. */
export interface MemberHealthView {
    id: string;
    state: HealthState;
    /** When the member entered `state`. */
    since: number;
    consecutiveSuccesses: number;
    consecutiveFailures: number;
    lastProbeAt?: number;
    lastOkAt?: number;
    lastLatencyMs?: number;
    lastStatus?: number;
    lastError?: string;
    /** Source address the check URL saw, from the last probe that reported one. */
    egressIp?: string;
    leaseErrors: number;
    /** The most recent transitions, oldest first (at most 10). */
    transitions: Omit<Transition, "id">[];
}

const KEPT_TRANSITIONS = 10;

/** The per-member state machine. Pure: time comes in as arguments, transitions go out as return values. */
export class MemberHealth {
    private view: MemberHealthView;

    constructor(
        id: string,
        now: number,
        private readonly t: HealthThresholds = DEFAULT_THRESHOLDS,
    ) {
        for (const [k, v] of Object.entries(t))
            if (!Number.isInteger(v) || v < 1)
                throw new RangeError(`health threshold \`${k}\` must be a whole number ≥ 1, got ${v}`);
        this.view = {
            id,
            state: "unknown",
            since: now,
            consecutiveSuccesses: 0,
            consecutiveFailures: 0,
            leaseErrors: 0,
            transitions: [],
        };
    }

    get state(): HealthState {
        return this.view.state;
    }

    /**
     * Carries on from `view` (another replica's verdict, published by the leader): a new leader starts
     * where the old one stopped instead of at `unknown`, so a failover does not flap health.
     */
    restore(view: MemberHealthView): void {
        this.view = { ...view, id: this.view.id, transitions: view.transitions.slice(-KEPT_TRANSITIONS) };
    }

    /** A copy, safe to hand out. */
    snapshot(): MemberHealthView {
        return { ...this.view, transitions: [...this.view.transitions] };
    }

    /** Feeds one probe result; returns the transition it caused, if any. */
    recordProbe(r: ProbeResult, at: number): Transition | undefined {
        const v = this.view;
        v.lastProbeAt = at;
        v.lastLatencyMs = r.latencyMs;
        v.lastStatus = r.status;
        if (r.egressIp) v.egressIp = r.egressIp;
        if (r.ok) {
            v.lastOkAt = at;
            v.consecutiveSuccesses++;
            v.consecutiveFailures = 0;
            const need = v.state === "unknown" ? this.t.initialSuccessThreshold : this.t.successThreshold;
            if (v.state !== "healthy" && v.consecutiveSuccesses >= need)
                return this.move(
                    "healthy",
                    `${v.consecutiveSuccesses} consecutive successful probe${v.consecutiveSuccesses > 1 ? "s" : ""} (${r.latencyMs} ms)`,
                    at,
                );
            return undefined;
        }
        return this.failure(r.error ?? `probe failed${r.status ? ` with ${r.status}` : ""}`, at);
    }

    /** A crawler released a lease on this member with outcome `error`: one failure signal. */
    reportLeaseError(at: number, detail = "a lease was released with outcome error"): Transition | undefined {
        this.view.leaseErrors++;
        return this.failure(detail, at);
    }

    private failure(error: string, at: number): Transition | undefined {
        const v = this.view;
        v.lastError = error;
        v.consecutiveFailures++;
        v.consecutiveSuccesses = 0;
        if (v.state !== "unhealthy" && v.consecutiveFailures >= this.t.failureThreshold)
            return this.move("unhealthy", `${v.consecutiveFailures} consecutive failures; last: ${error}`, at);
        return undefined;
    }

    private move(to: HealthState, reason: string, at: number): Transition {
        const v = this.view;
        const tr = { from: v.state, to, reason, at };
        v.state = to;
        v.since = at;
        v.transitions.push(tr);
        if (v.transitions.length > KEPT_TRANSITIONS) v.transitions.shift();
        return { id: v.id, ...tr };
    }
}
