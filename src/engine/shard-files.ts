/**
 * What the fleet driver (fleet-driver.ts) reads and writes beside the engine: the pools' layout from the
 * installation's stack file, the shards' stack files, a file backend's shard checkpoints, and the check
 * that no member would move between stacks. Files only: no engine run.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { parseShardStack, shardOfIndex } from "../model";
import { checkpointDir, checkpointMembers } from "./checkpoint";

/** What the stack file says of one pool: enough to lay out its shards (no secrets needed). */
export interface PoolLayout {
    name: string;
    replicas: number;
    membersPerStack?: number;
}

/** A stack's file (Pulumi.yaml's `stackConfigDir: stacks`). */
export function stackFileOf(workDir: string, stack: string): string {
    return path.join(workDir, "stacks", `Pulumi.${stack}.yaml`);
}

/**
 * The pools of the installation's stack file, `counts` in place of their `replicas`; none when it cannot
 * be read (then nothing is sharded, and the engine's own run reports the file's problem).
 */
export function stackPools(workDir: string, stack: string, counts: Record<string, number>): PoolLayout[] {
    let doc: { config?: Record<string, unknown> } | undefined;
    try {
        doc = YAML.parse(fs.readFileSync(stackFileOf(workDir, stack), "utf8"));
    } catch {
        return [];
    }
    const pools = doc?.config?.["egress:pools"];
    if (!Array.isArray(pools)) return [];
    return pools
        .filter((p): p is PoolLayout => typeof p?.name === "string" && typeof p?.replicas === "number")
        .map((p) => ({
            name: p.name,
            replicas: counts[p.name] ?? p.replicas,
            ...(typeof p.membersPerStack === "number" && p.membersPerStack >= 1
                ? { membersPerStack: p.membersPerStack }
                : {}),
        }));
}

/** The shard's stack file made the installation's, byte for byte (config and salt), when it differs. */
export function copyStackFile(workDir: string, stack: string, shard: string): void {
    const text = fs.readFileSync(stackFileOf(workDir, stack), "utf8");
    const file = stackFileOf(workDir, shard);
    const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
    if (current !== text) fs.writeFileSync(file, text, { mode: 0o600 });
}

/** A file backend's shard stacks of installation stack `stack`: its checkpoint files, in shard order. */
export function fileShardStacks(backendDir: string | undefined, stack: string): string[] {
    let files: string[] = [];
    try {
        if (backendDir) files = fs.readdirSync(checkpointDir(backendDir));
    } catch {
        // no checkpoint directory yet: no stack
    }
    const names = files.filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -".json".length));
    return shardsOf(names, stack);
}

/** Those of `names` that are shard stacks of `stack`, in pool then shard order. */
export function shardsOf(names: readonly string[], stack: string): string[] {
    return names.filter((n) => parseShardStack(n)?.stack === stack).sort(byShard);
}

export function byShard(a: string, b: string): number {
    const x = parseShardStack(a)!;
    const y = parseShardStack(b)!;
    return x.pool.localeCompare(y.pool) || x.k - y.k;
}

/**
 * A member lives in the stack its index says (model/shards.ts): a pool whose `membersPerStack` was unset
 * or changed while a shard holds members outside its new range would create them a second time in
 * another stack. The error saying so, or undefined. Read from a file backend's checkpoints; other
 * backends are not checked (their shards are not read without an engine run).
 */
export function movedMembers(
    backendDir: string | undefined,
    existing: readonly string[],
    pools: readonly PoolLayout[],
): Error | undefined {
    const size = new Map(pools.map((p) => [p.name, p.membersPerStack]));
    for (const stack of existing) {
        const s = parseShardStack(stack)!;
        if (!size.has(s.pool)) continue; // the pool is gone: its shards are destroyed with it
        const perStack = size.get(s.pool);
        const members = checkpointMembers(backendDir, stack) ?? [];
        if (members.every((m) => perStack !== undefined && shardOfIndex(m.index, perStack) === s.k)) continue;
        return new Error(
            `pool ${s.pool}: shard stack ${stack} holds members, and membersPerStack is ${perStack ?? "unset"} now: ` +
                "members cannot move between stacks; set it back, or scale the pool down to its first stack's members first",
        );
    }
    return undefined;
}
