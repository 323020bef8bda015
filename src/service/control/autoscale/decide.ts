/**
 * The autoscaler's decision as a pure function: a pool's signals over the window, its bounds and what
 * the pool decided before → scale to N, or hold, with the reasons in words. The loop (autoscaler.ts)
 * samples and acts; tests drive this directly (test/unit/autoscale-decide.test.ts).
 */
import type { AutoscaleConfig } from "../../../model";

/** A pool's demand signals, averaged over the window (autoscaler.ts samples them). */
export interface AutoscaleSignals {
    /** Mean leased members per sample. */
    leased: number;
    /** Mean healthy members per sample. */
    healthy: number;
    /** Mean of leased / healthy per sample (a sample without healthy members counts 1 when any is leased or refused). */
    utilization: number;
    /** Lease requests answered 503 none_available over the window, and gateway requests that found no member. */
    refusedLeases: number;
    refusedGateway: number;
    /** Samples the window holds (at least 1). */
    samples: number;
}

/** What a pool remembers between decisions. Epoch ms. */
export interface AutoscaleState {
    /** The last scale decision: no other comes before cooldownSeconds after it (waking from 0 aside). */
    lastDecisionAt?: number;
    /** The count it asked for. */
    lastTo?: number;
    /** Since when demand has stayed above target without a break (a scale-up waits for a full window of it). */
    aboveSince?: number;
    /** Since when demand has stayed below target without a break, and the most members it asked for meanwhile. */
    belowSince?: number;
    belowPeak?: number;
}

export interface AutoscaleInput {
    now: number;
    /** Members the pool is heading to (a queued or running request, else the stack file's replicas). */
    current: number;
    /**
     * Members leased at decision time (not the window's mean): a scale-down never goes below what they
     * need at target, so leases that just arrived are not drained away by a mean that missed them.
     */
    leasedNow?: number;
    config: AutoscaleConfig;
    signals: AutoscaleSignals;
    /**
     * How far back the signals reach. A scale-up waits until demand has been above target this long, so
     * the mean it sizes the pool by holds only the new load, not the quiet before it.
     */
    windowMs: number;
    state: AutoscaleState;
}

export interface AutoscaleDecision {
    action: "scale" | "hold";
    from: number;
    to: number;
    /** Members' worth of work: leased members plus refused requests per sample (see `demandOf`). */
    demand: number;
    /** ceil(demand / targetUtilization), clamped to [min, max]: what the pool would have with no damping. */
    wanted: number;
    reasons: string[];
    /** The pool's state after this decision (the caller stores it). */
    state: AutoscaleState;
}

/**
 * How far demand may drift from target before the pool changes at all (10%, like Kubernetes' HPA): a
 * steady load that wobbles around a boundary never moves the count.
 */
export const TOLERANCE = 0.1;

/**
 * A refused request is a member's worth of work that found none free: each counts as one leased member
 * in the sample it came in. A client retrying faster than the sample interval counts more than once —
 * the clamp to `max` bounds that, and the next quiet window gives the extra members back.
 */
export function demandOf(s: AutoscaleSignals): number {
    return s.leased + (s.refusedLeases + s.refusedGateway) / Math.max(1, s.samples);
}

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));
const round2 = (n: number) => Math.round(n * 100) / 100;

export function decide(input: AutoscaleInput): AutoscaleDecision {
    const { now, current, config: c, signals, state, windowMs } = input;
    const demand = demandOf(signals);
    // The epsilon keeps 3 / 0.5 at 6 where floating point would make it 6.000000000000001 → 7.
    const wanted = clamp(Math.ceil(demand / c.targetUtilization - 1e-9), c.min, c.max);
    const ratio = current > 0 ? demand / (current * c.targetUtilization) : demand > 0 ? Infinity : 1;
    const what = `demand ${round2(demand)} (leased ${round2(signals.leased)} of ${round2(signals.healthy)} healthy, ${
        signals.refusedLeases + signals.refusedGateway
    } refused) at target ${c.targetUtilization} wants ${wanted}`;
    const base = { from: current, demand: round2(demand), wanted };
    const hold = (why: string, next: AutoscaleState = state): AutoscaleDecision => ({
        ...base,
        action: "hold",
        to: current,
        reasons: [what, why],
        state: next,
    });
    const scale = (to: number, why: string): AutoscaleDecision => ({
        ...base,
        action: "scale",
        to,
        reasons: [what, why],
        state: { lastDecisionAt: now, lastTo: to },
    });
    const coolingFor = state.lastDecisionAt === undefined ? 0 : state.lastDecisionAt + c.cooldownSeconds * 1000 - now;

    // An empty pool serves nothing until it grows: the first refused request wakes it, cooldown or not —
    // unless the last decision already woke it and the pool is still empty (that operation failed).
    if (current === 0 && demand > 0) {
        if (coolingFor > 0 && (state.lastTo ?? 0) > 0)
            return hold(`the last wake-up did not take; cooling down for ${secs(coolingFor)}`);
        return scale(Math.max(1, wanted), "the pool is empty and a request found no member: waking it");
    }
    // Bounds the operator just changed are followed at once (after the cooldown), with no demand check.
    if (current < c.min || current > c.max) {
        if (coolingFor > 0) return hold(`outside [${c.min}, ${c.max}]; cooling down for ${secs(coolingFor)}`);
        const to = clamp(current, c.min, c.max);
        return scale(to, `${current} is outside the bounds [${c.min}, ${c.max}]`);
    }
    if (wanted > current && ratio > 1 + TOLERANCE) {
        const aboveSince = state.aboveSince ?? now;
        const next = { ...calm(state), aboveSince };
        const waited = now - aboveSince;
        if (waited < windowMs)
            return hold(`above target for ${secs(waited)} of the ${secs(windowMs)} window before scaling up`, next);
        if (coolingFor > 0) return hold(`above target; cooling down for ${secs(coolingFor)}`, next);
        return scale(wanted, `above target (${pct(ratio)} of target)`);
    }
    if (wanted < current && ratio < 1 - TOLERANCE) {
        const belowSince = state.belowSince ?? now;
        const waited = now - belowSince;
        // The most members any moment of the quiet period asked for: a dip in the middle of it does not
        // count. Only once the window holds nothing older than the quiet period, though: before that its
        // mean still carries the load that just ended (a release of 3 leases reads 2.5, 2, … for a window).
        const belowPeak = waited >= windowMs ? Math.max(state.belowPeak ?? wanted, wanted) : state.belowPeak;
        const { aboveSince: _above, ...rest } = state;
        const next = { ...rest, belowSince, ...(belowPeak !== undefined ? { belowPeak } : {}) };
        if (waited < c.scaleDownAfterSeconds * 1000)
            return hold(`below target for ${secs(waited)} of ${c.scaleDownAfterSeconds}s before scaling down`, next);
        if (coolingFor > 0) return hold(`below target; cooling down for ${secs(coolingFor)}`, next);
        const forLeasesNow = Math.ceil((input.leasedNow ?? 0) / c.targetUtilization - 1e-9);
        const to = Math.max(belowPeak ?? wanted, wanted, forLeasesNow);
        if (to >= current)
            return hold(
                forLeasesNow >= current
                    ? `below target over the window, but ${input.leasedNow} members are leased now`
                    : `below target, but ${to} members were wanted meanwhile`,
                next,
            );
        return scale(to, `below target for ${secs(waited)} (${pct(ratio)} of target)`);
    }
    const why = wanted === current ? "on target" : `within ${TOLERANCE * 100}% of target (${pct(ratio)})`;
    return hold(why, settledState(state));
}

/** The state without a quiet period: demand is back at or above target. */
function calm({ belowSince: _since, belowPeak: _peak, ...rest }: AutoscaleState): AutoscaleState {
    return rest;
}

/** The state with neither period running: demand is on target. */
function settledState({ aboveSince: _above, ...rest }: AutoscaleState): AutoscaleState {
    return calm(rest);
}

function secs(ms: number): string {
    return `${Math.ceil(ms / 1000)}s`;
}

function pct(ratio: number): string {
    return Number.isFinite(ratio) ? `${Math.round(ratio * 100)}%` : "∞";
}
