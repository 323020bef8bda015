import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import {
    clearSecret,
    type Installation,
    planMembers,
    type PoolConfig,
    type ProxyCredentials,
    type ProxyMember,
    parseShardStack,
    shardOfIndex,
} from "./model";
import { configFingerprint, EgressConfig, parseEgressConfig } from "./config";
import { ProxyPool } from "../components/pool";
import { kindOf } from "../components/registry";
import { withEntryOptions } from "../components/shared/retain";
import { memberName } from "./model/plan";
import { InstallationIdentity } from "./installation-resource";

export interface ProgramOptions {
    /** Project root: cloud-init files are resolved against it. */
    projectRoot: string;
    /** Machine-local runtime state (local proxy pid/log files). Defaults to `<projectRoot>/.egress/run`. */
    stateDir?: string;
    /** Already-validated config; unset, the program reads `egress:*` from the stack config. */
    config?: EgressConfig;
    /**
     * The installation this run proposes, read from the stack's state before the run
     * (src/engine/installation.ts): the recorded one, the legacy one a pre-identity stack implies, or a
     * fresh one. Called once per run. What state records always wins (installation-resource.ts).
     */
    installation: (project: string, stack: string) => Installation | Promise<Installation>;
    /**
     * Pool → count to use instead of the config's `replicas`, read once per run (a CLI rolling change's
     * surge: src/cli/rolling.ts). Unset or `{}`: the config's counts.
     */
    poolCounts?: () => Record<string, number>;
    /**
     * Read once per run: register only some members (a targeted `up` of those alone), carrying the rest
     * into the `proxies` output from state. Unset or undefined: every member.
     */
    scope?: () => ProgramScope | undefined;
}

/**
 * A targeted `up`'s part of the fleet (the driver's `up` with member targets, engine/member-urns.ts
 * `targetedMembers`): the engine keeps every untargeted resource as state has it, registered or not, so
 * the program registers only `members` and the run's cost follows the change, not the fleet's size. The
 * stack output `proxies` still lists every member: those of `carried` (state's members) the config keeps.
 */
export interface ProgramScope {
    members: ReadonlySet<string>;
    carried: readonly ProxyMember[];
    /** State's `appliedConfig` output: a scoped run applies no edit beside its members, so it keeps it. */
    appliedConfig?: string;
}

/** Stack outputs of the program. */
export interface ProgramOutputs {
    proxies: pulumi.Output<ProxyMember[]>;
    /**
     * Pool → the credentials its members require (pools with `auth` only), always a secret: encrypted in
     * state, shown by `egress outputs --show-secrets`, read by `egress serve` to hand to lease holders.
     */
    credentials: pulumi.Output<Record<string, ProxyCredentials>>;
    /** Member id → the credentials of its own proxy (kinds with `memberCredentials`), always a secret. */
    memberCredentials: pulumi.Output<Record<string, ProxyCredentials>>;
    /** The stack's installation id: what every managed thing's names and labels carry. */
    installation: string;
    /**
     * The stack file's digest (config/fingerprint.ts) the last unscoped run applied; a scoped run carries
     * it. Unset for a shard, and for a run whose stack file cannot be read (config passed in).
     */
    appliedConfig?: string;
}

/** Reads and validates `egress:providers` and `egress:pools` from the running stack's config. */
export function readStackConfig(projectRoot: string): EgressConfig {
    const cfg = new pulumi.Config("egress");
    return parseEgressConfig(
        { providers: cfg.getObject("providers") ?? {}, pools: cfg.getObject("pools") ?? [] },
        projectRoot,
        `stack ${pulumi.getStack()}`,
    );
}

/**
 * The one Pulumi program. `pulumi up` runs it through src/program-main.ts and the automation API runs it
 * inline; both read the same stack config, so a person and the service always converge to the same thing.
 */
export function createProgram(opts: ProgramOptions): () => Promise<ProgramOutputs> {
    return async () => {
        withoutSourcePositions();
        const config = withPoolCounts(opts.config ?? readStackConfig(opts.projectRoot), opts.poolCounts?.() ?? {});
        const scope = opts.scope?.();
        // A shard stack (model/shards.ts) runs the installation's program over its range of one pool's
        // members, under the installation stack's name and identity.
        const shard = shardOf(pulumi.getStack(), config);
        const stack = shard?.stack ?? pulumi.getStack();
        const installation = await recordInstallation(await opts.installation(pulumi.getProject(), stack));
        const context = {
            project: pulumi.getProject(),
            stack,
            installation,
            projectRoot: opts.projectRoot,
            stateDir: opts.stateDir ?? path.join(opts.projectRoot, ".egress", "run"),
        };
        // Resources every pool of one provider entry shares (KVM base images), once per entry that has pools.
        const providerShared: Record<string, unknown> = {};
        for (const [providerName, entry] of Object.entries(config.providers)) {
            const users = config.pools.filter((p) => p.provider === providerName);
            const kind = kindOf(entry).components();
            if (kind.createProviderShared && users.length > 0 && !shard)
                providerShared[providerName] = kind.createProviderShared(
                    providerName,
                    { providerName, entry, pools: users, context },
                    withEntryOptions(entry),
                );
        }
        const pools = config.pools
            .filter((pool) => !shard || pool.name === shard.pool)
            .map(
                (pool) =>
                    new ProxyPool(pool.name, {
                        pool,
                        providerName: pool.provider,
                        entry: config.providers[pool.provider],
                        context,
                        providerShared: providerShared[pool.provider],
                        ...membersHere(pool, shard?.k ?? 0, scope),
                        ...(shard ? { shard: shard.k } : {}),
                    }),
            );
        const proxies = pulumi
            .all(pools.map((p) => p.members))
            .apply((lists) => (scope ? withCarried(config, lists.flat(), scope.carried) : lists.flat()));
        // A shard's credentials are the installation stack's outputs (its pools' and members' alike).
        const none = () => pulumi.secret({} as Record<string, ProxyCredentials>);
        if (shard) return { proxies, credentials: none(), memberCredentials: none(), installation: installation.id };
        const credentials = pulumi.secret(
            Object.fromEntries(
                config.pools
                    .filter((p) => p.auth)
                    .map((p) => [
                        p.name,
                        {
                            username: p.auth!.username,
                            password: clearSecret(p.auth!.password, `pools.${p.name}.auth.password`),
                        },
                    ]),
            ),
        );
        const memberCredentials = pulumi.secret(
            Object.fromEntries(
                config.pools.flatMap((p) => {
                    const entry = config.providers[p.provider];
                    const own = kindOf(entry).memberCredentials?.(entry, p) ?? [];
                    return own.flatMap((c, index) => (c ? [[memberName(p.name, index), c] as const] : []));
                }),
            ),
        );
        const applied = scope ? scope.appliedConfig : shard ? undefined : configFingerprint(opts.projectRoot, stack);
        return {
            proxies,
            credentials,
            memberCredentials,
            installation: installation.id,
            ...(applied ? { appliedConfig: applied } : {}),
        };
    };
}

/** The shard a stack of this name is, when the config shards its pool (else it is an installation's stack). */
function shardOf(stackName: string, config: EgressConfig): { stack: string; pool: string; k: number } | undefined {
    const s = parseShardStack(stackName);
    return s && config.pools.some((p) => p.name === s.pool && p.membersPerStack) ? s : undefined;
}

/**
 * ProxyPool's `only` for a pool in this stack (shard `k`; 0 is the installation's stack): the members of
 * its range when the pool is sharded, within the scope's when the run is scoped; unset: every member.
 */
function membersHere(pool: PoolConfig, k: number, scope: ProgramScope | undefined): { only?: ReadonlySet<string> } {
    if (!pool.membersPerStack) return scope ? { only: scope.members } : {};
    const names = planMembers(pool)
        .filter((m) => shardOfIndex(m.index, pool.membersPerStack!) === k)
        .map((m) => m.name)
        .filter((name) => !scope || scope.members.has(name));
    return { only: new Set(names) };
}

/** `config` with these pools' counts in place of their `replicas` (the count only decides how many members run). */
function withPoolCounts(config: EgressConfig, counts: Record<string, number>): EgressConfig {
    if (!Object.keys(counts).length) return config;
    return { ...config, pools: config.pools.map((p) => (p.name in counts ? { ...p, replicas: counts[p.name] } : p)) };
}

/**
 * The members a scoped run registered plus those it carries from state that the config still wants
 * (its pools, below their counts, not registered now), in pool order then index, as an unscoped run lists them.
 */
function withCarried(config: EgressConfig, registered: ProxyMember[], carried: readonly ProxyMember[]): ProxyMember[] {
    const order = new Map(config.pools.map((p, i) => [p.name, i]));
    const counts = new Map(config.pools.map((p) => [p.name, p.replicas]));
    const now = new Set(registered.map((m) => m.id));
    const kept = carried.filter((m) => !now.has(m.id) && m.index < (counts.get(m.pool) ?? 0));
    return [...registered, ...kept].sort((a, b) => order.get(a.pool)! - order.get(b.pool)! || a.index - b.index);
}

/**
 * Registers the stack's identity and waits until the engine has it: on a first `up` the id is in state
 * before any member exists, so a run killed after creating a member still knows whose member it is. The
 * recorded id wins over the proposal. A preview of a first `up` has no recorded value yet: the proposal.
 */
async function recordInstallation(proposed: Installation): Promise<Installation> {
    const identity = new InstallationIdentity("installation", { installation: proposed.id, legacy: proposed.legacy });
    // Output internals (`isKnown`, `promise`): the public API has no way to wait for a value in a program.
    const id = identity.installation as unknown as { isKnown: Promise<boolean>; promise(): Promise<string> };
    const legacy = identity.legacy as unknown as { promise(): Promise<boolean> };
    if (!(await id.isKnown)) return proposed;
    return { id: await id.promise(), legacy: (await legacy.promise()) === true };
}

/**
 * No source positions in state (issue 33). For every resource the SDK records where in the program it
 * was made: `sourcePosition` and a `stackTrace` of every frame, ~1.2 KB of a local member's 3.4 KB. They
 * point into egress's own compiled files, so they tell an operator nothing, and they grow every
 * checkpoint the engine rewrites. The SDK takes both from one static method, `Resource.stackTrace`
 * (resource.js in @pulumi/pulumi 3.248, which package.json pins): answering [] leaves both out, and
 * spares the program a full stack trace parse per resource. test/e2e/code-out-of-state checks the state.
 */
export function withoutSourcePositions(): void {
    (pulumi.Resource as unknown as { stackTrace: (skip: number) => unknown[] }).stackTrace = () => [];
}
