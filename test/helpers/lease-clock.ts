/**
 * A clock for the service's lease rules (ServeOptions.leaseClock) that a test moves forward: past a pool
 * cooldown, a target rest or a lease TTL of whole seconds at once, instead of sleeping through it. It runs
 * with real time in between, so the service's timers (probes, sweeps) still see time pass.
 */
export interface LeaseClock {
    /** The time the lease rules read: real time plus every advance so far. */
    now: () => number;
    /** Moves the lease rules' time forward by `ms`. */
    advance(ms: number): void;
}

export function leaseClock(): LeaseClock {
    let ahead = 0;
    return {
        now: () => Date.now() + ahead,
        advance: (ms) => void (ahead += ms),
    };
}
