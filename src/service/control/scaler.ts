import type { EngineError } from "../../engine";
import type { ProxyMember } from "../../model";
import type { AutoscaleRecord, HealTarget, Operation, RotationRecord } from "../../state/operations/operation";
import { type MoreDue, reasonOf } from "./rotate/run";
import { runOperation, setsCounts } from "./run-operation";
import { OperationAbort } from "./operation-abort";
import { NotAcceptingError, type ScalerDeps } from "./scaler-deps";

export { NotAcceptingError, type ScalerDeps } from "./scaler-deps";

/**
 * Desired-state scaling and member repair for one stack. At most one engine operation runs; requests
 * that arrive meanwhile fold into the *queued* operation of their kind (scale/up: latest count per pool
 * wins; heal: members are added), which start in the order they were first queued. Clients therefore
 * never see a ConcurrentUpdate error, and after a burst the stack converges to the last request with at
 * most two engine runs.
 */
export class Scaler {
    private running?: Operation;
    /** At most one scale/up operation, one heal and one rotate operation, in the order they were created. */
    private queue: Operation[] = [];
    private idle: Promise<void> = Promise.resolve();
    private accepting: "starting" | "yes" | "stopping" = "starting";
    private applyingNow = false;
    /** The running scale/up operation waits for its drain: requests fold into it (it has applied nothing yet). */
    private drainingNow = false;
    private readonly stopping = new AbortController();
    /** The running operation's own abort: the service stopping, or this replica losing the stack (abandonRunning). */
    private current?: OperationAbort;
    /** A queued or running rotation's way to ask for members that came due meanwhile (rotate/run.ts). */
    private readonly moreDue = new Map<string, MoreDue>();

    constructor(private readonly deps: ScalerDeps) {}

    /** Sets what runs after every operation settles (ScalerDeps.onSettled), for a part built after the scaler. */
    onSettled(fn: NonNullable<ScalerDeps["onSettled"]>): void {
        this.deps.onSettled = fn;
    }

    /**
     * Records a scale request the caller already validated (the HTTP route checks the pool, the count
     * and maxReplicas); the operation re-checks against the stack file when it writes it. `id`: the id a
     * follower already answered with (src/state/cluster/scale-queue.ts): the new operation's, or, folded into a
     * queued one, one that finds it (Operation.requestIds).
     */
    request(pool: string, replicas: number, id?: string): Operation {
        if (this.accepting !== "yes") throw new NotAcceptingError(this.accepting);
        return this.enqueue("scale", { [pool]: replicas }, id);
    }

    /**
     * An autoscale decision (src/service/control/autoscale): a scale request that records why. Folds
     * like any request; the operation reads `autoscale` unless a person's scale request is folded in too.
     */
    autoscale(pool: string, replicas: number, why: AutoscaleRecord): Operation {
        if (this.accepting !== "yes") throw new NotAcceptingError(this.accepting);
        const op = this.enqueue("autoscale", { [pool]: replicas });
        op.autoscale = { ...op.autoscale, [pool]: why };
        this.deps.ops.update(op, {});
        return op;
    }

    /** Whether requests are taken now: recovery done and this replica leads (the autoscaler decides only then). */
    accepts(): boolean {
        return this.accepting === "yes";
    }

    /** Recovery is done: scale requests are accepted from now on. */
    open(): void {
        if (this.accepting === "starting") this.accepting = "yes";
    }

    /**
     * This replica stopped leading: no new requests; queued operations leave this scaler (scale requests
     * for the next leader to carry over, the rest recorded interrupted: the fence would stop them anyway);
     * a running one is left to `abandonRunning`. `open` takes requests again once it leads again.
     */
    pause(): void {
        if (this.accepting === "yes") this.accepting = "starting";
        this.moreDue.clear();
        for (const op of this.queue.splice(0))
            this.setAside(op, "this replica stopped leading the stack before this operation started");
    }

    /**
     * This replica lost the stack's lock while an operation ran (start/leading.ts): the lock may be
     * another's, whose engine must not meet this one's. The operation starts no further engine run (its
     * drain or lock wait ends: it is recorded interrupted, a scale request kept queued), the engine run in
     * progress is cancelled (it saves state and stops), and if it has not ended `graceMs` later (a step
     * stuck in a provider) its processes are ended (StackDriver.kill), so a leader elsewhere can count on
     * it being gone. What the engine left pending the next leader's recovery finishes.
     */
    abandonRunning(why: string, graceMs: number): void {
        if (!this.running) return;
        const log = this.deps.log.child({ operation: this.running.id, kind: this.running.kind });
        this.current?.abandon(why, this.deps.driver, graceMs, log);
    }

    /**
     * A scale request a previous leader, or this process before a restart, answered but never started
     * (OperationLog.recover): queued again under its id, or folded into the queued operation (the
     * start-up convergence), whose id then also answers to it. Latest wins per pool, as ever.
     */
    carry(rec: Operation): Operation {
        const op = this.enqueue("scale", { ...rec.desired }, rec.id);
        if (op.id !== rec.id) this.deps.ops.fold(rec, op);
        else this.deps.ops.update(op, { createdAt: rec.createdAt, requests: rec.requests, requestIds: rec.requestIds });
        this.deps.log.info(
            { operation: op.id, carried: rec.id, desired: rec.desired },
            "a scale request queued before the stop is applied now",
        );
        return op;
    }

    /**
     * Queues a plain `up` (start-up convergence), with counts to restore (an interrupted rotation's pool
     * count); folds into a queued operation like any request.
     */
    converge(desired: Record<string, number> = {}): Operation {
        return this.enqueue("up", desired);
    }

    /**
     * Queues a repair of these members (the reconcile loop, src/service/control/heal): a targeted refresh and
     * `up` that replaces them and touches nothing else. Joins a queued heal operation.
     */
    heal(targets: Record<string, HealTarget>): Operation {
        if (this.accepting !== "yes") throw new NotAcceptingError(this.accepting);
        const queued = this.queue.find((o) => o.kind === "heal");
        if (queued) {
            Object.assign(queued.reasons!, targets);
            queued.members = Object.keys(queued.reasons!);
            queued.requests++;
            return queued;
        }
        const op = this.deps.ops.create("heal", {});
        Object.assign(op, { members: Object.keys(targets), reasons: { ...targets } });
        this.queue.push(op);
        this.kick();
        return op;
    }

    /**
     * Queues a rotation by age or blocks (src/service/control/rotate) of members of one pool: surge members first,
     * then the heal path's replace, then back to the pool's count (rotate/run.ts). One rotation waits at
     * most; while one is queued, another request is refused (undefined): the rotator asks again later.
     */
    rotate(records: RotationRecord[], more?: MoreDue): Operation | undefined {
        if (this.accepting !== "yes") throw new NotAcceptingError(this.accepting);
        if (!records.length || this.queue.some((o) => o.kind === "rotate")) return undefined;
        const op = this.deps.ops.create("rotate", {});
        const members = records.map((r) => r.member);
        const reasons = Object.fromEntries(records.map((r) => [r.member, reasonOf(r)]));
        Object.assign(op, { members, reasons, rotations: records });
        if (more) this.moreDue.set(op.id, more);
        this.deps.ops.update(op, {});
        this.queue.push(op);
        this.kick();
        return op;
    }

    /** The count a pool is heading to: queued beats running; undefined = the stack file's. Never a surge. */
    desired(pool: string): number | undefined {
        return this.queue.find(setsCounts)?.desired[pool] ?? this.running?.desired[pool];
    }

    /** True while an operation runs or waits. */
    busy(): boolean {
        return !!this.running || this.queue.length > 0;
    }

    /**
     * True while this service's own engine run changes the stack (writer lock held): checkpoint changes
     * then are its own, and the fleet follows when the run settles. False while it waits for the lock.
     */
    applying(): boolean {
        return this.applyingNow;
    }

    /**
     * Graceful shutdown: stops accepting requests, records the queued operations as interrupted (their
     * desired counts are not applied; the stack file still holds the last applied ones) and waits for
     * the running one (after asking the engine to cancel it, with `cancel`).
     */
    async drain(opts: { cancel?: boolean } = {}): Promise<void> {
        this.accepting = "stopping";
        this.stopping.abort(new Error("the service stopped while this operation waited for the stack's writer lock"));
        // Ctrl-C: the running operation is cancelled safely (the engine saves state) instead of awaited.
        if (opts.cancel && this.running) this.deps.driver.cancel();
        this.moreDue.clear();
        for (const op of this.queue.splice(0)) this.setAside(op, "the service stopped before this operation started");
        while (this.running) await this.idle;
    }

    /**
     * A queued operation this scaler will not start (a stop, a step-down). A scale request stays `queued`
     * in the journal: a client was answered 202 with its id, and the next start or leader applies it
     * (carry). Anything else is interrupted: the loops behind heal, rotate and autoscale decide again.
     */
    private setAside(op: Operation, why: string): void {
        if (op.kind === "scale") {
            this.deps.log.info(
                { operation: op.id, desired: op.desired },
                "scale request kept: the next start or leader applies it",
            );
            this.deps.ops.update(op, { status: "queued", startedAt: undefined });
            return;
        }
        this.deps.ops.update(op, { status: "interrupted", finishedAt: new Date().toISOString(), error: why });
    }

    private enqueue(kind: "scale" | "up" | "autoscale", desired: Record<string, number>, id?: string): Operation {
        // A scale-up during a scale-down's drain keeps the members it still drains (drainScaleDown re-plans).
        const queued = this.queue.find(setsCounts) ?? (this.drainingNow ? this.running : undefined);
        if (queued) {
            Object.assign(queued.desired, desired);
            queued.requests++;
            // A person's request names the operation over the autoscaler's, and either over a plain `up`.
            if (kind === "scale" || (kind === "autoscale" && queued.kind === "up")) queued.kind = kind;
            if (id) this.deps.ops.update(queued, { requestIds: [...(queued.requestIds ?? []), id] });
            return queued;
        }
        const op = this.deps.ops.create(kind, desired, id);
        this.queue.push(op);
        this.kick();
        return op;
    }

    private kick(): void {
        if (this.running || !this.queue.length) return;
        const op = this.queue.shift()!;
        this.running = op;
        this.idle = this.execute(op).finally(() => {
            this.running = undefined;
            this.kick();
        });
    }

    private async execute(op: Operation): Promise<void> {
        const { ops } = this.deps;
        if (this.deps.fence && !(await this.deps.fence(this.stopping.signal))) {
            this.setAside(op, "this replica no longer leads the stack; the leader applies the stack's desired state");
            this.deps.log.warn({ operation: op.id, kind: op.kind }, "operation not started: no longer leading");
            return;
        }
        const log = this.deps.log.child({
            operation: op.id,
            kind: op.kind,
            ...(setsCounts(op) ? { desired: op.desired } : { members: op.members }),
        });
        ops.update(op, { status: "running", startedAt: new Date().toISOString() });
        log.info("operation started");
        const abort = (this.current = new OperationAbort(this.stopping.signal));
        let patch: Partial<Operation>;
        let proxies: ProxyMember[] | undefined;
        let lock: { release(): void } | undefined;
        let locked = false;
        try {
            // The wait shows on the operation (GET /v1/operations/<id>), and the journal knows it applied nothing yet.
            const since = new Date().toISOString();
            lock = await this.deps.lock?.(abort.signal, (holder) =>
                ops.update(op, { waitingForLock: { holder, since } }),
            );
            locked = true;
            if (op.waitingForLock) ops.update(op, { waitingForLock: undefined });
            this.applyingNow = true;
            const more = this.moreDue.get(op.id);
            this.moreDue.delete(op.id);
            ({ patch, proxies } = await runOperation(op, log, {
                deps: this.deps,
                signal: abort.signal,
                more,
                setDraining: (on) => (this.drainingNow = on),
            }));
        } catch (e) {
            // Interrupted: cancelled on request (Ctrl-C), or stopped while waiting for the writer lock.
            const waited = abort.signal.aborted && !locked;
            const interrupted = (e as EngineError).interrupted === true || waited || abort.isAbandoned;
            patch = { status: interrupted ? "interrupted" : "failed", error: (e as Error).message };
            // A scale request that stopped before the lock applied nothing: kept for the next start (setAside).
            if (waited && op.kind === "scale") patch = { status: "queued", startedAt: undefined };
            if (waited) patch.waitingForLock = undefined;
            if (interrupted) log.warn({ error: (e as Error).message }, "operation interrupted");
            else log.error({ error: (e as Error).message }, "operation failed");
        }
        // The fleet view is refreshed before the operation reads as settled, so a client that saw
        // `succeeded` also sees the new members.
        const done = patch.status === "queued" ? patch : { ...patch, finishedAt: new Date().toISOString() };
        try {
            await this.deps.onSettled?.({ ...op, ...done }, proxies);
        } catch (e) {
            log.error({ err: e }, "refreshing the fleet after the operation failed");
        } finally {
            this.deps.drain?.drainer.finish();
            this.applyingNow = false;
            lock?.release();
            abort.dispose();
            this.current = undefined;
        }
        try {
            ops.update(op, done);
        } catch (e) {
            log.error({ err: e }, "recording the operation's result failed"); // the journal write; the op itself is done
        }
    }
}
