import type { Logger } from "pino";
import { loadStackConfig } from "../../../config";
import { memberName, type ProxyMember } from "../../../model";
import type { Operation, RotationRecord } from "../../../state/operations/operation";
import { addChanges, type ReplaceResult } from "../../../fleet-ops/replace";
import { waitHealthy } from "../../../fleet-ops/healthy";
import type { ScalerDeps } from "../scaler-deps";

export { HEALTHY_TIMEOUT_MS } from "../../../fleet-ops/healthy";

/** The scaler's two paths a rotation is made of (scaler.ts passes them in; neither is copied here). */
export interface RotationSteps {
    /** The scale path: writes these counts to the stack file, drains the members they remove, runs `up`. */
    applyCounts(counts: Record<string, number>): Promise<{ changes: Record<string, number>; proxies?: ProxyMember[] }>;
    /** The heal path (replace.ts) over `op.members`: drain, targeted refresh, `up --replace`. */
    replace(): Promise<ReplaceResult>;
}

/**
 * Members of the pool (of `replicas` members) due now, asked again while the surge members stand: the
 * rotator's decision (rotator.ts), so members that came due during the operation go behind the same surge.
 */
export type MoreDue = (replicas: number) => Promise<RotationRecord[]>;

/**
 * One `rotate` operation: replaces `op.members` (one pool) without the pool's healthy count ever going
 * below its replicas N, whatever a kind's replace does. Some kinds replace delete-first (local: the
 * process id is the member's name, ports may be fixed; kvm: the domain's name), so the member itself
 * cannot simply be replaced create-first. Instead, and the same for every kind:
 *   1. surge: the pool grows to N + k (k = members rotated, ≤ maxSurge); the new members must be healthy;
 *   2. the old members drain (their leases run until released or the pool's drainSeconds) and are
 *      replaced through the heal path; each replacement must be healthy;
 *   2b. members that came due meanwhile (`more`) are replaced the same way, behind the same surge members;
 *       when more came due than surge members stand, the surge grows first (up to maxSurge and
 *       maxReplicas), so a backlog (a pool made at once, coming due at once) goes in batches of maxSurge
 *       whatever the first round saw;
 *   3. the pool goes back to N: the surge members drain and go (the scale-down path).
 * Indices stay dense (components/pool.ts), so step 3 always removes the surge members. Step 3 runs even
 * when 1 or 2 failed, so a failed rotation never leaves the pool grown. docs/decisions/0051-rotate-age.md has the why.
 */
export async function runRotation(
    op: Operation,
    deps: ScalerDeps,
    steps: RotationSteps,
    log: Logger,
    signal: AbortSignal,
    more?: MoreDue,
): Promise<{ changes: Record<string, number>; proxies?: ProxyMember[] }> {
    const records = op.rotations ?? [];
    const pool = records[0]?.pool;
    if (!pool || records.some((r) => r.pool !== pool))
        throw new Error("a rotate operation replaces members of one pool");
    const config = loadStackConfig(deps.projectRoot, deps.stack).pools.find((p) => p.name === pool);
    if (!config) throw new Error(`pool ${pool} is no longer in the stack config; nothing rotated`);
    const n = config.replicas;
    // The count the pool keeps (GET /v1/pools' `desired`, the autoscaler's current size), while the stack file says N + k.
    op.desired = { [pool]: n };
    const env = deps.rotation;
    const ipOf = (id: string) => env?.health(id)?.egressIp;
    let k = records.length;
    // The most surge members the pool takes (decide.ts gave the first batch no more than this).
    const cap = Math.max(k, Math.min(config.maxSurge, config.maxReplicas - n));
    const surge = Array.from({ length: cap }, (_, j) => memberName(pool, n + j));
    const begin = (batch: RotationRecord[]) => {
        batch.forEach((r, j) => Object.assign(r, { surge: surge[j], oldEgressIp: ipOf(r.member) }));
        // The heal path replaces op.members, with op.reasons saying why (its drain's message).
        op.members = batch.map((r) => r.member);
        deps.ops.update(op, { rotations: records });
    };
    begin(records);
    const changes: Record<string, number>[] = [];
    let proxies: ProxyMember[] | undefined;
    try {
        const grown = await steps.applyCounts({ [pool]: n + records.length });
        changes.push(grown.changes);
        const grownAt = Date.now();
        await env?.refresh(grown.proxies);
        // A previous rotation's surge member of the same name may have left a verdict behind.
        await waitHealthy(deps, surge.slice(0, k), grownAt, signal);
        log.info({ pool, surge: surge.slice(0, k) }, "surge members healthy; replacing the rotated members");
        for (let batch = records; batch.length;) {
            const replaced = await steps.replace();
            changes.push(replaced.changes);
            const at = Date.now();
            await env?.refresh(replaced.proxies);
            // A probe from before the replace may still read healthy: only one after it counts.
            await waitHealthy(deps, op.members ?? [], at, signal);
            for (const r of batch) {
                Object.assign(r, { newEgressIp: ipOf(r.member), replacedAt: new Date().toISOString() });
                if (env?.replaced?.(r)) r.reusedIp = true;
            }
            deps.ops.update(op, { rotations: records });
            const done = new Set(records.map((r) => r.member));
            batch = ((await more?.(n)) ?? []).filter((r) => !done.has(r.member)).slice(0, cap);
            if (batch.length) {
                records.push(...batch);
                for (const r of batch) op.reasons![r.member] = reasonOf(r);
                // Recorded (surge names included) before the pool grows: a restart then knows the grown count.
                begin(batch);
                if (batch.length > k) {
                    const grown = await steps.applyCounts({ [pool]: n + batch.length });
                    changes.push(grown.changes);
                    const at = Date.now();
                    await env?.refresh(grown.proxies);
                    await waitHealthy(deps, surge.slice(k, batch.length), at, signal);
                    log.info(
                        { pool, surge: surge.slice(0, batch.length) },
                        "more members came due than surge members stood; the surge grew",
                    );
                    k = batch.length;
                }
                log.info({ pool, members: op.members }, "more members came due; replacing them behind the surge");
            }
        }
    } finally {
        op.members = records.map((r) => r.member);
        const back = await steps.applyCounts({ [pool]: n });
        changes.push(back.changes);
        proxies = back.proxies;
    }
    return { changes: addChanges(...changes), proxies };
}

/**
 * Pool counts a stopped service must write back: per pool, the count of the last rotation (or rolling
 * change) that did not succeed (interrupted, failed — its shrink may not have run), unless a later operation succeeded in
 * setting that pool's count or rotating it; and only while the stack file still holds that rotation's
 * grown count (`replicas` read now), so a count someone set meanwhile is never undone. `ops` in creation
 * order (the journal's).
 */
export function countsToRestore(
    ops: readonly Operation[],
    replicas: (pool: string) => number | undefined,
): Record<string, number> {
    const out = new Map<string, { n: number; grown: number }>();
    for (const op of ops) {
        const rotate = op.kind === "rotate";
        for (const [pool, n] of Object.entries(op.desired)) {
            if (rotate && op.status !== "succeeded")
                out.set(pool, { n, grown: n + new Set(op.rotations?.map((r) => r.surge)).size });
            else if (op.status === "succeeded") out.delete(pool);
        }
        // A rolling change (src/fleet-ops/rolling/run.ts) grows a pool by its surge the same way; its `desired` may not name it.
        const r = op.rolling;
        if (r && op.status !== "succeeded") out.set(r.pool, { n: r.replicas, grown: r.replicas + r.surge.length });
    }
    return Object.fromEntries(
        [...out].filter(([pool, c]) => c.grown > c.n && replicas(pool) === c.grown).map(([pool, c]) => [pool, c.n]),
    );
}

/** Why a member is rotated, as its operation's `reasons` entry (its detail is the drain's message to its lease holder). */
export function reasonOf(r: RotationRecord): { reason: RotationRecord["reason"]; detail: string } {
    return {
        reason: r.reason,
        detail: r.reason === "blocked" ? (r.detail ?? "blocked") : `created ${r.createdAt}, due ${r.dueAt}`,
    };
}
