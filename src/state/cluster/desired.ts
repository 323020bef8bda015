import type Redis from "ioredis";
import type { Logger } from "pino";
import { ConfigError, loadStackConfig, scalableCounts, setPoolReplicas } from "../../config";
import { FencedWrites } from "./fenced-writes";
import { CLUSTER_KEYS } from "./records";

/** The desired counts of a stack as the store keeps them (`<prefix>desired`). */
export interface DesiredRecord {
    /** Members per scalable pool, as the stack file of the holder that wrote them said. */
    counts: Record<string, number>;
    /** When (the writer's clock, ISO), and which lock holder wrote them: a replica's id or `cli:<host>:<pid>`. */
    at: string;
    by: string;
    /** The operation whose counts they are, when a leader's operation wrote them. */
    operation?: string;
}

/** What taking the store's counts into the stack file did. */
export interface Adopted {
    /** The record read; undefined when the store had none (the stack file's counts were recorded then). */
    record?: DesiredRecord;
    /** Pools whose count in the stack file was changed to the store's. */
    changed: { pool: string; from: number; to: number }[];
    /** Pools whose stored count the stack file refuses now (a lower maxReplicas, a pool no longer scalable): kept as the file says. */
    refused: { pool: string; count: number; rule: string }[];
}

/**
 * A stack's desired counts in the store, so whichever replica leads next, on whatever host, and any
 * egress command holding the stack's lock, applies what was asked last rather than what its own copy of
 * the stack file says. Whoever holds the stack's lock writes them (FencedWrites): the leader each time
 * an operation writes counts to the stack file, a command (`egress up`/`scale` with `--store`) when it
 * ends. Whoever takes the lock first takes them into its stack file (`takeOver`). The stack file stays
 * what the engine reads; the store is the record that outlives one host's copy of it (docs/decisions/0064-desired-store.md).
 */
export class StoreDesired {
    private readonly writes: FencedWrites;

    constructor(
        private readonly o: {
            url: string;
            prefix: string;
            /** The lock holder id this writes as (a replica's, or a command's). */
            self: string;
            log: Logger;
            /** The replica's shared connection (connection.ts partConnection); unset, its own. */
            redis?: Redis;
            retryMs?: number;
        },
    ) {
        this.writes = new FencedWrites({ ...o, key: CLUSTER_KEYS.desired, what: "the desired counts" });
    }

    /** The record in the store (undefined: none, or not readable as one); throws while the store is away. */
    async read(): Promise<DesiredRecord | undefined> {
        const raw = await this.writes.read();
        if (raw === null) return undefined;
        try {
            const rec = JSON.parse(raw) as DesiredRecord;
            if (rec && typeof rec.counts === "object") return rec;
        } catch {
            // reported below
        }
        this.o.log.error(
            { key: this.writes.key },
            "the desired counts in the store are not readable; the stack file's count",
        );
        return undefined;
    }

    /** Records the stack file's counts now (in the background: `flushed` waits for it). */
    recordFile(projectRoot: string, stack: string, operation?: string): void {
        this.record(fileCounts(projectRoot, stack), operation);
    }

    record(counts: Record<string, number>, operation?: string): void {
        const rec: DesiredRecord = { counts, at: new Date().toISOString(), by: this.o.self, operation };
        this.writes.write(JSON.stringify(rec));
    }

    /**
     * Takes the store's counts into the stack file (only the pools whose count differs, each checked as a
     * scale request is), then records the file's counts back when they are not all the store's (none
     * stored yet, a count refused, a pool the record lacks). Call holding the stack's lock. Throws while
     * the store is away: a holder must not apply its own file's counts over ones it could not read.
     */
    async takeOver(projectRoot: string, stack: string): Promise<Adopted> {
        const record = await this.read();
        const out: Adopted = { record, changed: [], refused: [] };
        const file = fileCounts(projectRoot, stack);
        for (const [pool, to] of Object.entries(record?.counts ?? {})) {
            const from = file[pool];
            if (from === undefined || from === to) continue;
            try {
                setPoolReplicas(projectRoot, stack, pool, to);
                out.changed.push({ pool, from, to });
            } catch (e) {
                if (!(e instanceof ConfigError)) throw e;
                out.refused.push({ pool, count: to, rule: e.problems.map((p) => `${p.path}: ${p.rule}`).join("; ") });
            }
        }
        const now = fileCounts(projectRoot, stack);
        if (JSON.stringify(sorted(now)) !== JSON.stringify(sorted(record?.counts ?? {}))) this.record(now);
        return out;
    }

    flushed(): Promise<void> {
        return this.writes.flushed();
    }

    close(): void {
        this.writes.close();
    }
}

function fileCounts(projectRoot: string, stack: string): Record<string, number> {
    return scalableCounts(loadStackConfig(projectRoot, stack));
}

/** One line per change or refusal, for a log or a command's stderr. */
export function describeAdopted(a: Adopted, stack: string): string[] {
    const from = a.record
        ? ` (written by ${a.record.by} at ${a.record.at}${a.record.operation ? `, operation ${a.record.operation}` : ""})`
        : "";
    return [
        ...a.changed.map(
            (c) =>
                `stacks/Pulumi.${stack}.yaml: pool ${c.pool} replicas ${c.from} -> ${c.to}, the desired count in the store${from}`,
        ),
        ...a.refused.map(
            (r) =>
                `the store's desired count ${r.count} for pool ${r.pool} is refused by the stack file (${r.rule}); keeping the file's`,
        ),
    ];
}

function sorted(c: Record<string, number>): [string, number][] {
    return Object.entries(c).sort(([a], [b]) => a.localeCompare(b));
}
