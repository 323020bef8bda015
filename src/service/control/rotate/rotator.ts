import type { Logger } from "pino";
import type { PoolConfig, ProxyMember } from "../../../model";
import type { MemberHealthView } from "../../../probes";
import type { Operation, RotationRecord } from "../../../state/operations/operation";
import { Loop } from "../../../state/redis/loop";
import { NotAcceptingError, type Scaler } from "../scaler";
import { decideRotations, type PoolRotatePolicy, type RotatePlan } from "./decide";
import { IpMemory } from "./ip-memory";
import { type CountedOutcome, OutcomeWindow } from "./outcome-window";
import { policyView, rotates, type RotationView, trackPoolWideBlock } from "./view";

export type { RotationView } from "./view";

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
    onRotate?: (pool: string, reason: RotationRecord["reason"]) => void;
    /** Counts a pool-wide block as it begins (egress_rotation_pool_wide_blocks_total). */
    onPoolWideBlock?: (pool: string) => void;
    /** Counts a replacement that came back with an IP the pool had lately (egress_rotation_reused_ips_total). */
    onReusedIp?: (pool: string) => void;
    now?: () => number;
}

/**
 * The rotation loop of `egress serve`: every round it reads each member's age (state's creation stamps,
 * re-read only when the fleet changed) and outcome counts (`outcome`, fed by the fleet or the store's
 * counters), asks decide.ts which members are due or blocked and queues one `rotate` operation for the
 * first pool that has some. Like the autoscaler it decides only while the scaler accepts requests
 * (recovery done and, with replicas, this one leads) and no operation runs or waits.
 */
export class Rotator {
    private readonly views = new Map<string, RotationView>();
    private ages?: { key: string; at: Map<string, number> };
    /** Absent when the interval is 0 (the loop is off). */
    private readonly loop?: Loop;
    private readonly now: () => number;
    /** Per-member outcomes for rotation by blocks; kept as long as the longest pool's window. */
    private readonly outcomes: OutcomeWindow;
    /** Egress IPs each pool's members had lately (`ipMemorySeconds`). */
    private readonly ips: IpMemory;

    constructor(private readonly deps: RotatorDeps) {
        if (!Number.isFinite(deps.intervalMs) || deps.intervalMs < 0)
            throw new RangeError(
                `rotation interval must be 0 (off) or a positive number of milliseconds, got ${deps.intervalMs}`,
            );
        this.now = deps.now ?? Date.now;
        this.outcomes = new OutcomeWindow(keepMsOf(deps.pools()), this.now);
        this.ips = new IpMemory(this.now);
        if (deps.intervalMs)
            this.loop = new Loop({
                name: "rotation",
                everyMs: deps.intervalMs,
                round: () => this.runOnce(),
                log: deps.log,
                quiet: (e) => e instanceof NotAcceptingError,
            });
    }

    /** A lease release's outcome, or a block reported after it (Fleet.onOutcome): one outcome of `member`. */
    outcome(member: string, outcome: CountedOutcome): void {
        this.outcomes.record(member, outcome);
    }

    /** `total` outcomes of `member`, `blocked` of them blocked, counted by the store (cluster/verdicts.ts, leader only). */
    outcomesCounted(member: string, blocked: number, total: number): void {
        for (let i = 0; i < total; i++) this.outcomes.record(member, i < blocked ? "blocked" : "ok");
    }

    /**
     * A rotation's replacement passed its health check (rotate/run.ts): whether it came back with an IP the
     * pool had within `ipMemorySeconds` (logged and counted). Its outcomes start afresh under the same name.
     */
    replaced(r: RotationRecord): boolean {
        this.outcomes.reset(r.member);
        const seconds = this.deps.pools().find((p) => p.name === r.pool)?.ipMemorySeconds ?? 0;
        const reused = this.ips.usedWithin(r.pool, r.newEgressIp, seconds);
        this.ips.seen(r.pool, r.newEgressIp);
        if (!reused) return false;
        this.deps.log.warn(
            { pool: r.pool, member: r.member, ip: r.newEgressIp },
            `${r.member}'s replacement exits through ${r.newEgressIp}, an IP pool ${r.pool} used within its ipMemorySeconds (${seconds} s): the rotation brought no fresh exit IP`,
        );
        this.deps.onReusedIp?.(r.pool);
        return true;
    }

    start(): void {
        this.loop?.start();
    }

    /** Stops the loop; waits for a round in flight. */
    async stop(): Promise<void> {
        await this.loop?.stop();
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
        const all = this.deps.pools();
        const pools = all.filter(rotates);
        for (const name of [...this.views.keys()]) if (!pools.some((p) => p.name === name)) this.views.delete(name);
        this.outcomes.setKeep(keepMsOf(all));
        this.outcomes.prune(new Set(this.deps.members().map((m) => m.id)));
        if (!pools.length) return [];
        for (const p of pools) this.views.set(p.name, policyView(p, this.views.get(p.name)));
        // The fleet view follows an operation only when it settles; one operation at a time.
        if (!this.deps.scaler.accepts() || this.deps.scaler.busy()) return [];
        // Only while no rotation runs: a replacement's own IP must not count as one the pool had before it.
        this.rememberIps(pools);
        const plans = await this.decide(pools, (p) => this.deps.scaler.desired(p.name) ?? p.replicas);
        for (const plan of plans) {
            const v = this.views.get(plan.pool)!;
            v.nextDueAt = plan.nextDueAt !== undefined ? new Date(plan.nextDueAt).toISOString() : undefined;
            v.holding = plan.holding;
            trackPoolWideBlock(plan.pool, v, plan.poolWideBlock, this.now(), this.deps.log, this.deps.onPoolWideBlock);
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
                    rotateAfterSeconds: p.rotateAfterSeconds,
                    rotateOnBlocks: p.rotateOnBlocks,
                    maxSurge: p.maxSurge,
                    replicas: replicas(p),
                    maxReplicas: p.maxReplicas,
                },
            ]),
        );
        return decideRotations({
            now: this.now(),
            pools: policies,
            outcomes: (id, windowSeconds) => this.outcomes.counts(id, windowSeconds),
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
        if (!p || !rotates(p) || !this.deps.scaler.accepts()) return [];
        const [plan] = await this.decide([{ ...p, maxReplicas: Infinity }], () => replicas);
        for (const d of plan.rotate) this.deps.onRotate?.(pool, d.reason);
        return recordsOf(plan);
    }

    private queue(plan: RotatePlan): void {
        const records = recordsOf(plan);
        try {
            const op = this.deps.scaler.rotate(records, (n) => this.moreDue(plan.pool, n));
            if (!op) return;
            for (const r of records) this.deps.onRotate?.(plan.pool, r.reason);
            this.deps.log.info(
                { operation: op.id, pool: plan.pool, members: op.members },
                `rotating ${records.map((r) => `${r.member} (${r.reason === "blocked" ? r.detail : "age"})`).join(", ")} of pool ${plan.pool}`,
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

    /** The egress IPs the health probes see on the rotating pools' members now. */
    private rememberIps(pools: PoolConfig[]): void {
        const memory = new Map(pools.map((p) => [p.name, p.ipMemorySeconds]));
        this.ips.prune(memory);
        for (const m of this.deps.members())
            if (memory.get(m.pool)) this.ips.seen(m.pool, this.deps.health(m.id)?.egressIp);
    }
}

function recordsOf(plan: RotatePlan): RotationRecord[] {
    const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
    return plan.rotate.map((d) => ({
        member: d.member,
        pool: plan.pool,
        reason: d.reason,
        ...(d.createdAt !== undefined ? { createdAt: iso(d.createdAt) } : {}),
        ...(d.dueAt !== undefined ? { dueAt: iso(d.dueAt) } : {}),
        ...(d.detail !== undefined ? { detail: d.detail } : {}),
    }));
}

/** Outcomes are kept as long as the longest window of a pool that rotates by blocks (0: none is kept). */
function keepMsOf(pools: readonly PoolConfig[]): number {
    return Math.max(0, ...pools.map((p) => (p.rotateOnBlocks?.windowSeconds ?? 0) * 1000));
}
