/**
 * An installation whose pools spread their members over shard stacks (`membersPerStack`,
 * src/model/shards.ts): the installation's stack driver, which also drives each shard's, so every caller
 * (the CLI, the service, the benches) sees one fleet. A change touches the stacks that hold what it
 * changes: a +10 runs the engine on the one or two shards the new members land in, a heal or rotation on
 * the member's own, so its cost follows the size of a shard, not of the fleet (issue 33). A stack without
 * sharded pools takes every path of StackDriver unchanged.
 *
 * A shard's stack file is a copy of the installation's (same config, same encryption salt), written
 * before each of its runs, so the shard decrypts the same secrets and a plain `pulumi up -s <shard>` runs
 * the same program. Reads merge every stack's state: URNs carry their stack, so member targets found in
 * the merged state say which stack to run.
 */
import * as fs from "node:fs";
import type { ProxyMember } from "../model";
import { parseShardStack, Shard, shardOfIndex, shardsFor, shardStackName, stackOfUrn, urnInStack } from "../model";
import { OperationOptions, OperationResult, StackDriver } from "./driver";
import type { ForgetResult } from "./forget";
import type { DriverOptions } from "./stack-session";
import { membersOf, rootProxies } from "./checkpoint";
import {
    byShard,
    copyStackFile,
    fileShardStacks,
    movedMembers,
    type PoolLayout,
    shardsOf,
    stackFileOf,
    stackPools,
} from "./shard-files";
import { countTargets, memberCreatedAt, MemberTargets, memberTargets } from "./member-urns";
import { POOL_TYPE, urnName, type StateResource } from "./state";
import type { ResolvedInstallation } from "./installation";

/** What a fleet operation runs on one stack. */
type StackRuns = Pick<StackDriver, "up" | "refresh" | "stateResources">;

export class FleetDriver extends StackDriver {
    private readonly shardDrivers = new Map<string, StackDriver>();
    private readonly options: DriverOptions;
    private counts: Record<string, number> = {};
    private fleetTail: Promise<unknown> = Promise.resolve();

    constructor(opts: DriverOptions) {
        super(opts);
        this.options = opts;
    }

    override setPoolCounts(counts: Record<string, number>): void {
        super.setPoolCounts(counts);
        this.counts = { ...counts };
        for (const d of this.shardDrivers.values()) d.setPoolCounts(counts);
    }

    override up(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.fleet(async () => {
            const shards = this.layoutShards();
            const existing = await this.existingShards();
            if (!shards.length && !existing.length) return super.up(opts);
            const moved = movedMembers(this.backend.fileDir, existing, this.layoutPools());
            if (moved) throw moved;
            const started = Date.now();
            const results: OperationResult[] = [];
            if (opts.target?.length) {
                for (const [stack, part] of this.byStack(opts))
                    results.push(await this.runOn(stack, async (d) => d.up((await hasPool(d)) ? part : whole(part))));
            } else {
                results.push(await super.up(opts));
                for (const s of shards) results.push(await this.runOn(s.stack, (d) => d.up(opts)));
                const wanted = new Set(shards.map((s) => s.stack));
                for (const stack of existing.filter((n) => !wanted.has(n))) await this.removeShard(stack);
            }
            return { ...merged(results, "up", started), proxies: await this.mergedProxies() };
        });
    }

    override refresh(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.fleet(async () => {
            const stacks = await this.allShardStacks();
            if (!stacks.length) return super.refresh(opts);
            const started = Date.now();
            const results: OperationResult[] = [];
            if (opts.target?.length) {
                for (const [stack, part] of this.byStack(opts))
                    results.push(await this.runOn(stack, (d) => d.refresh(part)));
            } else {
                results.push(await super.refresh(opts));
                for (const stack of stacks) results.push(await this.runOn(stack, (d) => d.refresh(opts)));
            }
            return merged(results, "refresh", started);
        });
    }

    override destroy(opts: OperationOptions = {}): Promise<OperationResult> {
        return this.fleet(async () => {
            const started = Date.now();
            const results: OperationResult[] = [];
            for (const stack of await this.existingShards()) results.push(await this.removeShard(stack));
            results.push(await super.destroy(opts));
            return merged(results, "destroy", started);
        });
    }

    override async previewReplaced(opts: OperationOptions = {}): Promise<string[]> {
        const own = await super.previewReplaced(opts);
        const shards: string[] = [];
        for (const s of this.layoutShards()) shards.push(...(await this.driverOf(s.stack).previewReplaced(opts)));
        return [...own, ...shards].sort();
    }

    override async recover(): Promise<string[]> {
        const done = await super.recover();
        for (const stack of await this.existingShards()) done.push(...(await this.driverOf(stack).recover()));
        return done;
    }

    override cancel(): boolean {
        const own = super.cancel();
        return [...this.shardDrivers.values()].map((d) => d.cancel()).some(Boolean) || own;
    }

    override kill(): boolean {
        return super.kill() || [...this.shardDrivers.values()].some((d) => d.kill());
    }

    override refuseRuns(reason: Error | undefined): void {
        super.refuseRuns(reason);
        for (const d of this.shardDrivers.values()) d.refuseRuns(reason);
    }

    /** Running updates' locks on any of the installation's stacks (a file backend's: its shards are listed). */
    override liveLocks(): { pid: number; hostname: string }[] {
        const shards = this.fileShards().map((stack) => this.driverOf(stack).liveLocks());
        return [...super.liveLocks(), ...shards.flat()];
    }

    override async lockHolders(): Promise<{ pid?: number; hostname?: string }[]> {
        const holders = await super.lockHolders();
        for (const stack of await this.existingShards()) holders.push(...(await this.driverOf(stack).lockHolders()));
        return holders;
    }

    /** Forgets a member in the stack its index says it lives in. */
    override forget(member: string, apply: boolean): Promise<ForgetResult> {
        const stack = this.stackOfMember(member, this.layoutPools());
        return stack === this.stackName ? super.forget(member, apply) : this.driverOf(stack).forget(member, apply);
    }

    override async membersInState(): Promise<ProxyMember[]> {
        return membersOf(await this.mergedResources());
    }

    override async memberTargets(ids: readonly string[]): Promise<MemberTargets> {
        return memberTargets(await this.mergedResources(), ids);
    }

    override async memberCreatedAt(): Promise<Map<string, number>> {
        return memberCreatedAt(await this.mergedResources());
    }

    /** countTargets over every stack, each new member's URN moved to the stack its index lands in. */
    override async countTargets(desired: Record<string, number>): Promise<string[] | undefined> {
        const targets = countTargets(await this.mergedResources(), desired);
        const pools = this.layoutPools();
        return targets?.map((urn) => urnInStack(urn, this.stackOfMember(urnName(urn), pools)));
    }

    /** The stack member `<pool>-<index>` lives in (model/shards.ts): its shard's, or the installation's. */
    private stackOfMember(id: string, pools: readonly PoolLayout[]): string {
        const cut = id.lastIndexOf("-");
        const pool = pools.find((p) => p.name === id.slice(0, cut));
        const k = pool?.membersPerStack ? shardOfIndex(Number(id.slice(cut + 1)), pool.membersPerStack) : 0;
        return k > 0 && Number.isInteger(k) ? shardStackName(this.stackName, pool!.name, k) : this.stackName;
    }

    override async proxies(): Promise<ProxyMember[]> {
        if (!(await this.allShardStacks()).length) return super.proxies();
        return this.mergedProxies();
    }

    /** Every stack's resources, as `type::name` (gc counts a thing known when any stack holds its id). */
    override async resources(): Promise<{ type: string; name: string; id?: string }[]> {
        return (await this.mergedResources()).map((r) => ({ type: r.type, name: urnName(r.urn), id: r.id }));
    }

    override async stateResources(): Promise<StateResource[]> {
        return this.mergedResources();
    }

    /** The members the installation's stack and every shard's output lists, in pool order, then index. */
    private async mergedProxies(): Promise<ProxyMember[]> {
        const lists: ProxyMember[][] = [rootProxies(await super.stateResources()) ?? (await super.proxies())];
        for (const stack of await this.allShardStacks()) {
            const d = this.driverOf(stack);
            lists.push(rootProxies(await d.stateResources()) ?? (await d.proxies()));
        }
        const order = new Map(this.layoutPools().map((p, i) => [p.name, i]));
        const rank = (m: ProxyMember) => order.get(m.pool) ?? order.size;
        return lists.flat().sort((a, b) => rank(a) - rank(b) || a.index - b.index);
    }

    private async mergedResources(): Promise<StateResource[]> {
        const all = await super.stateResources();
        for (const stack of await this.allShardStacks()) all.push(...(await this.driverOf(stack).stateResources()));
        return all;
    }

    /** The operation's targets and replacements, split by the stack their URNs name. */
    private byStack(opts: OperationOptions): Map<string, OperationOptions> {
        const out = new Map<string, OperationOptions>();
        const part = (stack: string) =>
            out.get(stack) ?? out.set(stack, { ...opts, target: [], replace: [] }).get(stack)!;
        for (const urn of opts.target ?? []) part(stackOfUrn(urn)).target!.push(urn);
        for (const urn of opts.replace ?? []) part(stackOfUrn(urn)).replace!.push(urn);
        for (const o of out.values()) if (!o.replace!.length) delete o.replace;
        return out;
    }

    /** Runs `fn` on the installation's stack (StackDriver's own runs) or on a shard's (its stack file brought up to date first). */
    private runOn<T>(stack: string, fn: (d: StackRuns) => Promise<T>): Promise<T> {
        if (stack === this.stackName) return fn(this.ownRuns());
        if (parseShardStack(stack)?.stack !== this.stackName)
            throw new Error(`internal: ${stack} is neither stack ${this.stackName} nor one of its shards`);
        this.writeShardFile(stack);
        return fn(this.driverOf(stack));
    }

    /** This stack's runs as StackDriver makes them: a fleet operation on its own stack must not start another. */
    private ownRuns(): StackRuns {
        return {
            up: (o) => super.up(o),
            refresh: (o) => super.refresh(o),
            stateResources: () => super.stateResources(),
        };
    }

    /** Destroys a shard no pool needs any more and removes its stack and stack file. */
    private async removeShard(stack: string): Promise<OperationResult> {
        this.writeShardFile(stack);
        const d = this.driverOf(stack);
        const result = await d.destroy();
        await d.removeStack();
        fs.rmSync(stackFileOf(this.workDir, stack), { force: true });
        this.shardDrivers.delete(stack);
        return result;
    }

    private driverOf(stack: string): StackDriver {
        let d = this.shardDrivers.get(stack);
        if (!d) {
            // Its stack file before anything opens the stack: a stack created without it gets a salt of its own.
            this.writeShardFile(stack);
            d = new StackDriver({
                ...this.options,
                stack,
                create: true,
                installationOf: () => this.mainInstallation(),
            });
            d.setPoolCounts(this.counts);
            this.shardDrivers.set(stack, d);
        }
        return d;
    }

    /** The installation's stack identity, which every shard records as its own. */
    private mainInstallation(): Promise<ResolvedInstallation> {
        return super.installation();
    }

    /** The pools of the installation's stack file at this driver's counts (shard-files.ts). */
    private layoutPools(): PoolLayout[] {
        return stackPools(this.workDir, this.stackName, this.counts);
    }

    private writeShardFile(stack: string): void {
        copyStackFile(this.workDir, this.stackName, stack);
    }

    /** The shard stacks the counts need, and each sharded pool's spare (model/shards.ts `shardsFor`). */
    private layoutShards(): Shard[] {
        return shardsFor(this.stackName, this.layoutPools(), { spare: true });
    }

    /**
     * Shard stacks of this installation that exist: a file backend's checkpoint files (no CLI start);
     * another backend's stack list, asked only when the stack file shards a pool.
     */
    private async existingShards(): Promise<string[]> {
        if (this.backend.fileDir) return this.fileShards();
        if (!this.layoutPools().some((p) => p.membersPerStack)) return [];
        return shardsOf(
            (await this.stackNames()).map((n) => n.split("/").pop()!),
            this.stackName,
        );
    }

    private fileShards(): string[] {
        return fileShardStacks(this.backend.fileDir, this.stackName);
    }

    /** Every shard stack the layout wants or that exists. */
    private async allShardStacks(): Promise<string[]> {
        const all = new Set([...this.layoutShards().map((s) => s.stack), ...(await this.existingShards())]);
        return [...all].sort(byShard);
    }

    /** Fleet operations one at a time, apart from each stack driver's own order. */
    private fleet<T>(fn: () => Promise<T>): Promise<T> {
        const next = this.fleetTail.then(fn, fn);
        this.fleetTail = next.catch(() => undefined);
        return next;
    }
}

/** True when the stack's state holds a pool component: a targeted run of new members needs their parent there. */
async function hasPool(d: StackRuns): Promise<boolean> {
    return (await d.stateResources()).some((r) => !r.delete && r.type === POOL_TYPE);
}

/** The run untargeted: a shard new to state creates its pool and exactly the members the count gives its range. */
function whole(opts: OperationOptions): OperationOptions {
    const { target: _t, replace: _r, targetDependents: _d, ...rest } = opts;
    return rest;
}

/** One result for the runs of one fleet operation: their changes summed. */
function merged(results: OperationResult[], kind: OperationResult["kind"], started: number): OperationResult {
    const changes: Record<string, number> = {};
    for (const r of results) for (const [op, n] of Object.entries(r.changes)) changes[op] = (changes[op] ?? 0) + n;
    return { kind, changes, durationMs: Date.now() - started };
}
