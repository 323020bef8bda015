import type { RequestListener } from "node:http";
import type { Logger } from "pino";
import { announceService } from "../../state/cluster/announce";
import type { ServeOptions } from "./options";
import type { Parts } from "./parts";
import { ConfigError, loadStackConfig } from "../../config";
import { countsToRestore } from "../control/rotate/run";
import { recoverStack } from "./recover";
import { awaitForeignEngines } from "../../state/cluster/foreign-engines";
import { forgetGoneElsewhere } from "../../engine";

/**
 * What leading the stack means for this replica, taken up and put down as leadership moves (one
 * process alone leads from its start): take over the operation journal (what was running is marked
 * interrupted), recover the stack as after a restart (leftovers, locks, pending
 * creates, under the writer lock), open the CLI's unix socket, probe and decide health (replicas show the
 * leader's verdicts, cluster/verdicts.ts), publish the members to the lease store,
 * accept scale and heal requests, and converge the stack to its file. Transitions run one at a time,
 * in order, so a quick lose-and-win never interleaves a recovery with a step-down.
 */
export class StackLead {
    private local?: Awaited<ReturnType<typeof announceService>>;
    private chain: Promise<void> = Promise.resolve();
    private leadingNow = false;

    constructor(
        private readonly p: Parts,
        private readonly o: {
            opts: ServeOptions;
            log: Logger;
            runDir: string;
            checkUrl: string;
            url: string;
            /** The API without tokens, for the CLI's socket (its scope is the file permission). */
            localListener: RequestListener;
            /** Whether this replica still holds the lock (a transition queued behind another may be stale). */
            stillLeading: () => boolean;
            /** Gives the lock up after a failed take-over, so the claim is tried again (cluster.ts `resign`). */
            resign: () => Promise<void>;
            /** With replicas: since when this replica leads (cluster.ts), for the wait of foreign-engines.ts. */
            leadingSince?: () => number | undefined;
        },
    ) {}

    /** Takes the stack now (the single process at start): a failure fails the start. */
    async lead(): Promise<void> {
        const { p, o } = this;
        // The journal as the previous leader (or the previous process) left it: its running operation was
        // cut off. Read now, not at start: a follower's copy from its start is stale, and marking it then
        // would call a live leader's operation interrupted.
        p.ops.setWriter(true);
        const { interrupted, carried } = await p.ops.recover();
        for (const op of interrupted)
            o.log.warn(
                { operation: op.id, kind: op.kind, desired: op.desired },
                "operation was interrupted by a previous stop",
            );
        await this.takeDesired();
        // A rotation cut off before its shrink left the stack file at replicas + surge; the start-up
        // convergence writes the pool's own count back (drained, as any scale-down).
        // An unreadable stack file is recoverStack's to report; there is nothing to restore against then.
        const file = (() => {
            try {
                return loadStackConfig(o.opts.projectRoot, o.opts.stack).pools;
            } catch {
                return [];
            }
        })();
        const restore = countsToRestore(p.ops.list(), (pool) => file.find((c) => c.name === pool)?.replicas);
        // A previous leader on another host may have left a Pulumi lock: it is gone once it has had its grace.
        if (
            o.leadingSince &&
            !(await awaitForeignEngines({
                holders: () => p.driver.lockHolders(),
                leadingSince: o.leadingSince,
                graceMs: o.opts.engineKillGraceMs ?? 30_000,
                notice: (line, detail) => o.log.warn(detail, line),
            }))
        ) {
            o.log.warn("lost the stack's leadership while waiting for the previous holder's engine; not recovering");
            this.leadingNow = true; // the step-down queued behind this undoes the rest
            return;
        }
        await recoverStack(p, o.opts, { log: o.log, runDir: o.runDir, checkUrl: o.checkUrl });
        this.local = await announceService({
            runDir: o.runDir,
            stack: o.opts.stack,
            url: o.url,
            listener: o.localListener,
        });
        // Deciding health before publishing: the eligibility published is then the verdicts it carries on from.
        await p.verdicts?.lead();
        this.leadingNow = true;
        // The lock lost during the recovery: stop here. The step-down queued behind this undoes the rest.
        if (!o.stillLeading()) {
            o.log.warn("lost the stack's leadership while taking it up; not opening the scaler");
            return;
        }
        p.redisStore?.setPublisher(true);
        p.scaler.open();
        if (o.opts.converge ?? true) p.scaler.converge(restore);
        else if (Object.keys(restore).length)
            o.log.warn(
                { desired: restore },
                "an interrupted rotation may have left surge members; convergence is off, so scale the pool back by hand",
            );
        // After the convergence, so a request answered before the stop wins over a rotation's old count.
        for (const op of carried) p.scaler.carry(op);
        // Scale requests followers queued (also while none led) apply as if they had reached this replica.
        // One whose id the journal already knows (taken over above) was applied by a leader that died before
        // removing it from the queue: applied again, it would run twice, or undo a later request.
        p.scaleQueue?.lead({
            known: (id) => p.ops.get(id) !== undefined,
            recorded: () => p.ops.flushed(),
            apply: (q) => {
                p.scaler.request(q.pool, q.replicas, q.id);
                o.log.info(
                    { pool: q.pool, replicas: q.replicas, operation: q.id, via: q.via },
                    "scale requested (queued by a replica)",
                );
            },
        });
    }

    /**
     * The desired counts the stack's last lock holder recorded in the store (src/state/cluster/desired.ts) go into
     * this host's stack file first: the recovery and the convergence below then apply what was asked last,
     * not what an older copy of the file says. The store away fails the take-over (retried: a leader must
     * not converge to counts it could not check); a stack file that cannot be read is recoverStack's to report.
     */
    private async takeDesired(): Promise<void> {
        const { p, o } = this;
        if (!p.desired) return;
        let adopted;
        try {
            adopted = await p.desired.takeOver(o.opts.projectRoot, o.opts.stack);
        } catch (e) {
            if (e instanceof ConfigError) return;
            throw e;
        }
        const rec = adopted.record && {
            by: adopted.record.by,
            at: adopted.record.at,
            operation: adopted.record.operation,
        };
        for (const c of adopted.changed)
            o.log.warn(
                { pool: c.pool, file: c.from, desired: c.to, recorded: rec },
                "the stack file's count differs from the desired count in the store; the store's is applied",
            );
        for (const r of adopted.refused)
            o.log.error(
                { pool: r.pool, desired: r.count, rule: r.rule },
                "the desired count in the store is refused by the stack file; the file's count is applied",
            );
    }

    /** Leadership changed (cluster.ts): lead or follow, after whatever transition runs now. */
    changed(leading: boolean): void {
        this.chain = this.chain
            .then(async () => {
                if (leading && this.o.stillLeading() && !this.leadingNow) await this.lead();
                else if (!leading && this.leadingNow) await this.follow();
            })
            .catch(async (e) => {
                // A leader that cannot recover must not sit on the lock: give it up and let the claim loop retry.
                this.o.log.error({ err: e }, "taking up the stack's leadership failed; giving the lock up to retry");
                await this.o.resign();
            });
    }

    /**
     * Stops starting engine operations at once, and abandons the running one: the lock may be another's
     * by now, so its engine run is cancelled, and ended if it does not stop in time (Scaler.abandonRunning).
     */
    private async follow(): Promise<void> {
        this.leadingNow = false;
        forgetGoneElsewhere(); // only a leader may count another host's lock holders gone
        // The journal is the leader's from now on: nothing this replica still settles overwrites it.
        this.p.ops.setWriter(false);
        // First, before any wait on the store: every moment counts once the lock may be another's.
        this.p.scaler.abandonRunning(
            "this replica lost the stack's lock while this operation ran: it stops here, and the next leader applies the desired state",
            this.o.opts.engineKillGraceMs ?? 30_000,
        );
        await this.p.scaleQueue?.follow();
        this.p.scaler.pause();
        this.p.reconciler.follow(); // the next leader may change the repair back-off: reread it on leading again
        this.p.redisStore?.setPublisher(false);
        await this.p.verdicts?.follow();
        await this.local?.close();
        this.local = undefined;
    }

    /** Resolves once the transitions asked for so far are done (the start waits for its first one). */
    async idle(): Promise<void> {
        await this.chain;
    }

    async close(): Promise<void> {
        await this.chain;
        await this.local?.close();
    }
}
