import type Redis from "ioredis";
import type { HealthMonitor } from "../../probes";
import { LEASE_ERRORS_KEY, LEASE_OUTCOMES_KEY } from "../store/scripts";

/**
 * The store's per-member lease counters as the leading replica reads them (verdicts.ts, on every
 * publication): releases count their outcomes in the store on whichever replica they happen, and the
 * leader hands what grew since its last round to its monitor (errors) and the rotation's outcome window.
 * A replica that takes the lead starts from a fresh baseline (`reset`).
 */
export class LeaderCounters {
    /** The store's lease-error counters as last seen by this leader (undefined: take the next read as the baseline). */
    private errorsSeen?: Map<string, number>;
    /** The same for the store's outcome counters (`<member>|t`, `<member>|b`). */
    private outcomesSeen?: Map<string, number>;

    constructor(
        private readonly redis: Redis,
        private readonly o: {
            prefix: string;
            monitor: Pick<HealthMonitor, "reportLeaseError">;
            onOutcomes?: (member: string, blocked: number, total: number) => void;
        },
    ) {}

    /** Takes the next reads as the baseline (this replica is taking the lead). */
    reset(): void {
        this.errorsSeen = undefined;
        this.outcomesSeen = undefined;
    }

    /** Releases with outcome `error` on any replica: one failure signal each to this leader's monitor. */
    async countLeaseErrors(): Promise<void> {
        const grown = await this.growth(LEASE_ERRORS_KEY, this.errorsSeen, (now) => (this.errorsSeen = now));
        for (const [id, n] of grown)
            for (let i = 0; i < n; i++) this.o.monitor.reportLeaseError(id, "a lease was released with outcome error");
    }

    /** Outcomes released or reported on any replica since the last round, to the rotation's window. */
    async countOutcomes(): Promise<void> {
        if (!this.o.onOutcomes) return;
        const grown = await this.growth(LEASE_OUTCOMES_KEY, this.outcomesSeen, (now) => (this.outcomesSeen = now));
        for (const [field, total] of grown) {
            if (!field.endsWith("|t")) continue;
            const id = field.slice(0, -2);
            this.o.onOutcomes(id, grown.get(`${id}|b`) ?? 0, total);
        }
    }

    /**
     * How much each counter of a store hash grew since `seen`; the first read is the baseline (counts from
     * before this replica led were the previous leader's to count).
     */
    private async growth(
        hash: string,
        seen: Map<string, number> | undefined,
        keep: (now: Map<string, number>) => void,
    ): Promise<Map<string, number>> {
        const now = new Map(
            Object.entries(await this.redis.hgetall(this.o.prefix + hash)).map(([k, v]) => [k, Number(v)]),
        );
        keep(now);
        if (!seen) return new Map();
        return new Map([...now].map(([k, n]) => [k, n - (seen.get(k) ?? 0)] as const).filter(([, d]) => d > 0));
    }
}
