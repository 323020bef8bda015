import type { Logger } from "pino";
import type { PoolConfig, ProxyMember } from "../../../model";
import type { MemberHealthView } from "../../../probes";
import type { Operation, RotationRecord } from "../../operations/journal";
import { NotAcceptingError, type Scaler } from "../scaler";
import { decideRotations, type PoolRotatePolicy, type RotatePlan } from "./decide";

export interface RotatorDeps {
    /** Time between rounds; 0 = the loop is off. */
    intervalMs: number;
    log: Logger;
    scaler: Scaler;
    /** Members of the fleet (from state). */
    members: () => ProxyMember[];
    health: (id: string) => MemberHealthView | undefined;
    /** The stack file's pools (re-read every round). */
    pools: () => PoolConfig[];
    /** Member id → epoch ms created, from state (driver.memberCreatedAt); read only when the fleet changed. */
    createdAt: () => Promise<Map<string, number>>;
    /** Counts every member a rotation is queued for (egress_rotations_total). */
    onRotate?: (pool: string, reason: "age") => void;
    now?: () => number;
}

/** What GET /v1/pools shows of a pool with `rotateAfterSeconds`. */
export interface RotationView {
    rotateAfterSeconds: number;
    maxSurge: number;
    /** The earliest deadline among its members (past while one waits), ISO. */
    nextDueAt?: string;
    /** Why members that are due wait. */
    holding?: string;
    lastRotation?: { operation: string; status: Operation["status"]; at: string; rotations: RotationRecord[] };
}

/**
 * The rotation loop of `egress serve`: every round it reads each member's age (state's creation stamps,
 * re-read only when the fleet changed), asks decide.ts which members are due and queues one `rotate`
 * operation for the first pool that has some. Like the autoscaler it decides only while the scaler
 * accepts requests (recovery done and, with replicas, this one leads) and no operation runs or waits.
 */
export class Rotator {
    private readonly views = new Map<string, RotationView>();
    private ages?: { key: string; at: Map<string, number> };
    private timer?: NodeJS.Timeout;
    private round?: Promise<unknown>;
    private stopped = true;
    private readonly now: () => number;

    constructor(private readonly deps: RotatorDeps) {
        if (!Number.isFinite(deps.intervalMs) || deps.intervalMs < 0)
            throw new RangeError(
                `rotation interval must be 0 (off) or a positive number of milliseconds, got ${deps.intervalMs}`,
            );
        this.now = deps.now ?? Date.now;
    }

    start(): void {
        if (!this.deps.intervalMs || !this.stopped) return;
        this.stopped = false;
        this.schedule();
    }

    /** Stops the loop; waits for a round in flight. */
    async stop(): Promise<void> {
        this.stopped = true;
        clearTimeout(this.timer);
        await this.round;
    }

    /** An operation settled: the members' ages are read again; a rotation's outcome is shown. */
    settled(op: Operation): void {
        this.ages = undefined;
        if (op.kind !== "rotate" || !op.rotations?.length) return;
        const view = this.views.get(op.rotations[0].pool);
        if (view)
            view.lastRotation = {
                operation: op.id,
                status: op.status,
                at: op.finishedAt ?? new Date(this.now()).toISOString(),
                rotations: op.rotations,
            };
    }

    view(pool: string): RotationView | undefined {
        return this.views.get(pool);
    }

    /** One round; returns the plans (empty when nothing is decided). Exposed for tests. */
    async runOnce(): Promise<RotatePlan[]> {
        const pools = this.deps.pools().filter((p) => p.rotateAfterSeconds !== undefined);
        for (const name of [...this.views.keys()]) if (!pools.some((p) => p.name === name)) this.views.delete(name);
        if (!pools.length) return [];
        for (const p of pools) {
            const v = this.views.get(p.name);
            this.views.set(p.name, { ...v, rotateAfterSeconds: p.rotateAfterSeconds!, maxSurge: p.maxSurge });
        }
        // The fleet view follows an operation only when it settles; one operation at a time.
        if (!this.deps.scaler.accepts() || this.deps.scaler.busy()) return [];
        const plans = await this.decide(pools, (p) => this.deps.scaler.desired(p.name) ?? p.replicas);
        for (const plan of plans) {
            const v = this.views.get(plan.pool)!;
            v.nextDueAt = plan.nextDueAt !== undefined ? new Date(plan.nextDueAt).toISOString() : undefined;
            v.holding = plan.holding;
        }
        const next = plans.find((p) => p.rotate.length);
        if (next) this.queue(next);
        return plans;
    }

    /** decide.ts over the fleet now, for these pools at these counts. */
    private async decide(pools: PoolConfig[], replicas: (p: PoolConfig) => number): Promise<RotatePlan[]> {
        const members = this.deps.members().filter((m) => m.host); // no address yet: still provisioning
        const ages = await this.agesOf(members);
        const policies: Record<string, PoolRotatePolicy> = Object.fromEntries(
            pools.map((p) => [
                p.name,
                {
                    rotateAfterSeconds: p.rotateAfterSeconds!,
                    maxSurge: p.maxSurge,
                    replicas: replicas(p),
                    maxReplicas: p.maxReplicas,
                },
            ]),
        );
        return decideRotations({
            now: this.now(),
            pools: policies,
            members: members.map((m) => ({
                id: m.id,
                pool: m.pool,
                index: m.index,
                createdAt: ages.get(m.id),
                health: this.deps.health(m.id)?.state ?? "unknown",
            })),
        });
    }

    /**
     * Asked by a running rotation of `pool` (rotate/run.ts) once its batch is replaced: members due now,
     * with the pool at `replicas` (its surge members stand above them, so no room check applies).
     */
    private async moreDue(pool: string, replicas: number): Promise<RotationRecord[]> {
        const p = this.deps.pools().find((c) => c.name === pool);
        if (!p || p.rotateAfterSeconds === undefined || !this.deps.scaler.accepts()) return [];
        const [plan] = await this.decide([{ ...p, maxReplicas: Infinity }], () => replicas);
        for (const _ of plan.rotate) this.deps.onRotate?.(pool, "age");
        return recordsOf(plan);
    }

    private queue(plan: RotatePlan): void {
        const records = recordsOf(plan);
        try {
            const op = this.deps.scaler.rotate(records, (n) => this.moreDue(plan.pool, n));
            if (!op) return;
            for (const _ of records) this.deps.onRotate?.(plan.pool, "age");
            this.deps.log.info(
                { operation: op.id, pool: plan.pool, members: op.members },
                `rotating ${op.members?.join(", ")} of pool ${plan.pool} (age)`,
            );
        } catch (e) {
            if (!(e instanceof NotAcceptingError)) throw e; // stopped leading or stopping: the next leader decides
        }
    }

    /** The members' creation times, read from state again only when the members or their addresses changed. */
    private async agesOf(members: readonly ProxyMember[]): Promise<Map<string, number>> {
        const key = members.map((m) => `${m.id}=${m.url}`).join(" ");
        if (this.ages?.key !== key) this.ages = { key, at: await this.deps.createdAt() };
        return this.ages.at;
    }

    private schedule(): void {
        this.timer = setTimeout(() => {
            this.round = this.runOnce()
                .catch((e) => this.deps.log.error({ err: e }, "rotation round failed"))
                .finally(() => {
                    this.round = undefined;
                    if (!this.stopped) this.schedule();
                });
        }, this.deps.intervalMs);
        this.timer.unref();
    }
}

function recordsOf(plan: RotatePlan): RotationRecord[] {
    return plan.rotate.map((d) => ({
        member: d.member,
        pool: plan.pool,
        reason: "age",
        createdAt: new Date(d.createdAt).toISOString(),
        dueAt: new Date(d.dueAt).toISOString(),
    }));
}
