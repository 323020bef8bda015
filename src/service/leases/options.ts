import { randomUUID } from "node:crypto";
import { LEASE_DEFAULTS, LeaseManagerOptions } from "./types";

export type ResolvedOptions = Required<Omit<LeaseManagerOptions, "onError">> & Pick<LeaseManagerOptions, "onError">;

/** The manager's options over LEASE_DEFAULTS, merged once; a bad number fails here, naming the option. */
export function resolveOptions(options: LeaseManagerOptions): ResolvedOptions {
    // Fields explicitly set to undefined keep their default (callers pass optional config through).
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
    const o: ResolvedOptions = {
        now: Date.now,
        newLeaseId: randomUUID,
        initiallyEligible: false,
        ...LEASE_DEFAULTS,
        ...given,
    };
    for (const k of Object.keys(LEASE_DEFAULTS) as (keyof typeof LEASE_DEFAULTS)[]) {
        const v = o[k];
        if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
            throw new RangeError(`LeaseManager option \`${k}\` must be a finite number ≥ 0, got ${String(v)}`);
    }
    if (o.maxTtlSeconds < 1) throw new RangeError("LeaseManager option `maxTtlSeconds` must be ≥ 1");
    return o;
}
