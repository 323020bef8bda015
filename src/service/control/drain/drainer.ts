import type { Logger } from "pino";
import type { Fleet } from "../../fleet/fleet";
import type { DrainView } from "../../../state/operations/operation";
import { DrainEntry, DrainTarget, stepDrain } from "./plan";
import { type CatalogueEntry, EXIT } from "../../../model/error-catalogue";

export interface DrainerDeps {
    fleet: Pick<Fleet, "setDraining" | "revoke" | "isLeased" | "onRelease"> & Partial<Pick<Fleet, "syncLeases">>;
    /** The pool's `drainSeconds` (read from the stack file when a member starts draining). */
    drainSeconds: (pool: string) => number;
    log: Logger;
    now?: () => number;
    /** Longest sleep between checks: TTL expiry ends leases without a release call. @default 200 */
    pollMs?: number;
}

/** Thrown when the service stops mid-drain: the scaler records the operation as interrupted. */
export class DrainInterrupted extends Error {
    /** Its `--json` error.type is \"Error\": the class never named itself (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "Error" };
    }
    readonly interrupted = true;
}

/**
 * Waits out an operation's drain: marks the members it takes away as draining (never leased again),
 * wakes on every release and at least every `pollMs`, ends the leases that outlive their deadline,
 * and returns once no member still waits. `targets` is asked again on every wake, so a request folded
 * into the operation meanwhile (a scale-up) un-drains members that now stay.
 */
export class Drainer {
    private readonly now: () => number;
    /** Entries of the drain in progress or last finished, until `finish` clears them. */
    private entries: DrainEntry[] = [];

    constructor(private readonly deps: DrainerDeps) {
        this.now = deps.now ?? Date.now;
    }

    async run(
        targets: () => DrainTarget[],
        signal: AbortSignal,
        report: (members: DrainView[], draining: boolean) => void,
    ): Promise<void> {
        const { fleet, log } = this.deps;
        let wake: () => void = () => undefined;
        const stopListening = fleet.onRelease(() => wake());
        const onAbort = () => wake();
        signal.addEventListener("abort", onAbort);
        try {
            for (let first = true; ; first = false) {
                // A lease another replica granted a moment ago must drain too, not be revoked unseen.
                await fleet.syncLeases?.();
                const step = stepDrain(
                    this.entries,
                    targets(),
                    (id) => fleet.isLeased(id),
                    this.now(),
                    (pool) => this.deps.drainSeconds(pool) * 1000,
                );
                const started = step.entries.filter(
                    (e) => e.state !== "kept" && !this.entries.some((p) => p.member === e.member && p.state !== "kept"),
                );
                for (const e of started) fleet.setDraining(e.member, e.until);
                for (const e of step.kept) fleet.setDraining(e.member, undefined);
                for (const e of step.revoke) {
                    fleet.revoke(e.member, {
                        reason: e.reason,
                        member: e.member,
                        message: `${e.message}; its lease outlived drainSeconds`,
                    });
                    log.warn(
                        { member: e.member, until: new Date(e.until).toISOString() },
                        `ended the lease on ${e.member}: drain deadline reached`,
                    );
                }
                const changed =
                    (first && step.entries.length > 0) ||
                    started.length > 0 ||
                    step.kept.length > 0 ||
                    step.revoke.length > 0 ||
                    step.entries.some((e, i) => e.state !== this.entries[i]?.state);
                this.entries = step.entries;
                if (started.length)
                    log.info(
                        {
                            members: started.map((e) => e.member),
                            until: new Date(Math.max(...started.map((e) => e.until))).toISOString(),
                        },
                        "draining members before removing them",
                    );
                if (step.kept.length)
                    log.info(
                        { members: step.kept.map((e) => e.member) },
                        "drain cancelled: a later request keeps these members",
                    );
                // Operations that take nothing away carry no drain record.
                if (step.entries.length && (changed || step.done)) report(this.view(), !step.done);
                if (step.done) return;
                if (signal.aborted)
                    throw new DrainInterrupted(
                        "the service stopped while this operation drained members; the next start applies the stack file's counts",
                    );
                const nextDeadline = Math.min(...step.entries.filter((e) => e.state === "waiting").map((e) => e.until));
                await new Promise<void>((resolve) => {
                    const timer = setTimeout(
                        resolve,
                        Math.max(0, Math.min(this.deps.pollMs ?? 200, nextDeadline - this.now())),
                    );
                    wake = () => {
                        clearTimeout(timer);
                        resolve();
                    };
                });
            }
        } finally {
            stopListening();
            signal.removeEventListener("abort", onAbort);
        }
    }

    /** Members replaced at once (gone: they serve nothing): their leases end now, with the target's reason. */
    endLeases(targets: readonly DrainTarget[]): string[] {
        const ended = targets
            .filter((t) => this.deps.fleet.revoke(t.member, { reason: t.reason, member: t.member, message: t.message }))
            .map((t) => t.member);
        if (ended.length)
            this.deps.log.warn({ members: ended }, "ended the leases on members that are gone; they are replaced now");
        return ended;
    }

    /** Ends the drain marks once the operation settled (after the fleet synced: removed members are gone from it). */
    finish(): void {
        for (const e of this.entries) if (e.state !== "kept") this.deps.fleet.setDraining(e.member, undefined);
        this.entries = [];
    }

    private view(): DrainView[] {
        return this.entries.map((e) => ({
            member: e.member,
            reason: e.reason,
            until: new Date(e.until).toISOString(),
            state: e.state,
        }));
    }
}
