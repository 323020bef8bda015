import type { Operation } from "../../state/operations/operation";
import { membersMentioned } from "./lifecycle";
import type { HealthSource, MemberNote } from "./views";

/**
 * What the fleet (fleet.ts) knows of its members' lifecycle besides health: the drains operations
 * started and the last failed operation naming each member. The fleet's own while this replica leads;
 * a follower falls back on the leader's, as published with its verdicts (HealthSource.note), so every
 * replica shows the same drains and errors. A leader publishes these notes in turn (`notes`).
 */
export class MemberNotes {
    /** Members an operation is taking away (src/service/control/drain): never leased, whatever their health. */
    private readonly draining = new Map<string, { until: number }>();
    /** The last failed operation naming each member (for `lastError`/`failed`). */
    private readonly opErrors = new Map<string, { message: string; at: number }>();

    constructor(private readonly health: HealthSource) {}

    /** Starts (`until` given) or ends a member's drain. */
    setDraining(id: string, until: number | undefined): void {
        if (until === undefined) this.draining.delete(id);
        else this.draining.set(id, { until });
    }

    /** This replica's drain of `id`, or (a follower) the leader's as published with its verdicts. */
    drainOf(id: string): { until: number } | undefined {
        const until = this.draining.get(id)?.until ?? this.health.note?.(id)?.drainingUntil;
        return until === undefined ? undefined : { until };
    }

    /** This replica's last failed operation naming `id`, or (a follower) the leader's. */
    opErrorOf(id: string): { message: string; at: number } | undefined {
        return this.opErrors.get(id) ?? this.health.note?.(id)?.opError;
    }

    /** Forgets the operation errors of members no longer listed. */
    forgetErrorsUnless(listed: (id: string) => boolean): void {
        for (const id of this.opErrors.keys()) if (!listed(id)) this.opErrors.delete(id);
    }

    /** A failed operation: remembers its error for the members it names (a heal's members always). */
    operationSettled(op: Operation, members: Iterable<string>): void {
        if (op.status !== "failed" || !op.error) return;
        const at = Date.parse(op.finishedAt ?? "") || Date.now();
        const named = new Set([...(op.members ?? []), ...membersMentioned(op.error, members)]);
        for (const id of named) this.opErrors.set(id, { message: op.error, at });
    }

    /** This replica's own notes per member (not the leader's): what a leader publishes. */
    notes(): Map<string, MemberNote> {
        const out = new Map<string, MemberNote>();
        for (const [id, d] of this.draining) out.set(id, { drainingUntil: d.until });
        for (const [id, e] of this.opErrors) out.set(id, { ...out.get(id), opError: e });
        return out;
    }
}
