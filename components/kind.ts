/**
 * What a provider kind is: one `KindDefinition` per folder under components/, listed in
 * components/registry.ts, and the shapes of its runtime hooks (checker, gone check, collector). Config,
 * program, health, gc, doctor and the service ask the registry, never a kind by name.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { Logger } from "pino";
import type { z } from "zod";
import type {
    ConfigProblem,
    Installation,
    OwnerScope,
    PoolConfig,
    ProxyCredentials,
    ProxyMember,
    StackContext,
} from "../src/model";
import type { MemberArgs, ProxyMemberComponent } from "./shared/member";

/**
 * The replace key a member resource's `diff` gives when its `read` found it no longer running (a local
 * process gone, a KVM domain shut off): the next `up` replaces it to repair it, not because its config
 * changed. Rolling changes (src/service/control/rolling, `egress up`'s refusal) count only the other
 * keys: a dead member has no capacity to keep while it is replaced. The member resources of kvm,
 * kubernetes and gcp import it; local/provider.ts and kvm/domain.ts spell it out (they were serialized by
 * value into state before issue 33, and capture no module still).
 */
export const REPAIR_REPLACE_KEY = "running";

/** Every kind's entry has a `type` (the kind's name) and the common fields (components/shared/config.ts). */
export interface EntryBase {
    type: string;
    retainOnDelete?: boolean;
}

/** Arguments for resources one pool shares across its members (a firewall, a config Secret). */
export interface PoolSharedArgs<E extends EntryBase = EntryBase, P = unknown> {
    pool: PoolConfig;
    providerName: string;
    entry: E;
    context: StackContext;
    /** What `createProviderShared` returned for this pool's provider entry, if the kind has that hook. */
    providerShared?: P;
    /**
     * The shard stack this is (src/model/shards.ts: 1 and up), unset in the installation's stack. A shardable
     * kind makes what a shard's members need in the shard, named apart from every other stack's.
     */
    shard?: number;
}

/** Arguments for resources every pool of one provider entry shares (KVM base images). */
export interface ProviderSharedArgs<E extends EntryBase = EntryBase> {
    providerName: string;
    entry: E;
    /** The pools that use this entry, in config order (at least one). */
    pools: PoolConfig[];
    context: StackContext;
}

/**
 * Undoes a create that a killed engine run started but never recorded (a pending create in state),
 * finding what it made by its deterministic name in `inputs`. It removes only what carries the stack's
 * `installation` (a same-named thing of another installation is an error naming both, and stays).
 * Returns a line per thing removed.
 */
export type PendingCreateUndo = (
    inputs: Record<string, unknown>,
    installation: Installation,
    /** `egress:providers` of the stack's config as JSON text, decrypted (where state keeps no key: KVM members). */
    providers?: string,
) => Promise<string[]>;

/**
 * A resource an earlier release kept in state in a shape this one no longer writes (a Kubernetes member's
 * Deployment and Service, now one member resource). The hand-over marks the live thing for the new shape
 * to adopt and answers the URN of the resource that takes it over ("": not its to hand over, left as it
 * is); the engine then drops the old one from
 * state (src/engine/hand-over.ts), so nothing is deleted or replaced.
 */
export type HandOver = (
    resource: { urn: string; id: string; outputs: Record<string, any> },
    provider: Record<string, any> | undefined,
    /** The stack's config, decrypted, by key (`gcp:credentials`): where a kind's credentials may live. */
    config: (key: string) => string | undefined,
) => Promise<string>;

/**
 * How a kind's components plug into ProxyPool (the part that loads @pulumi/<cloud>: the registry loads it
 * only when a program runs). ProxyPool never looks at a kind's details.
 */
export interface ProviderKindModule<E extends EntryBase = EntryBase, S = unknown, P = unknown> {
    /**
     * Creates resources shared by every pool of one provider entry, once per entry for the whole program
     * (called by src/program.ts); the result reaches `createPoolShared` as `args.providerShared`.
     */
    createProviderShared?(name: string, args: ProviderSharedArgs<E>, opts: pulumi.ComponentResourceOptions): P;
    /** Creates per-pool resources shared by the members; the result reaches every member as `args.shared`. */
    createPoolShared?(name: string, args: PoolSharedArgs<E, P>, opts: pulumi.ComponentResourceOptions): S;
    /** The kind's member component, `new <Kind>Proxy(name, args, opts)`. */
    createMember(name: string, args: MemberArgs<E, S>, opts: pulumi.ComponentResourceOptions): ProxyMemberComponent;
}

/** Where a kind's runtime hooks find machine-local things. */
export interface KindEnv {
    /** The service's (or CLI's) run dir: local proxies keep their files under `<runDir>/local/<stack>`. */
    runDir: string;
    stack: string;
}

/** One line of `egress doctor`. */
export interface DoctorFinding {
    check: string;
    ok: boolean;
    detail: string;
    /** What to do about it, when not ok. */
    fix?: string;
}

/** What `egress doctor` hands a kind's checks. */
export interface DoctorEnv {
    /** PULUMI_HOME the engine uses (provider plugins live under it). */
    pulumiHome: string;
    /** Directory of the pulumi CLI egress built. */
    binDir: string;
    /** Root of the egress package (where node_modules resolves). */
    packageRoot: string;
}

// ---- The runtime hooks' shapes: provider checks (src/service/observe/provider-checks.ts), liveness (the reconcile
// loop) and `egress gc`. Kinds implement them, src/ calls them: they are part of the contract.

/** One verdict about one target of a provider entry (a KVM host, a GCE zone, a Kubernetes namespace). */
export interface CheckVerdict {
    /** What was checked, e.g. the host name, `zone/europe-west1-b`, `namespace/egress`. */
    target: string;
    ok: boolean;
    /** The stage that failed (e.g. `key`, `tcp`, `ssh-auth`, `libvirt`, `credentials`, `rbac`, `api`). Unset when ok. */
    stage?: string;
    /** One sentence an operator can act on. */
    message: string;
    /** Facts gathered on the way (versions, free bytes, counts). Never secrets. */
    details?: Record<string, unknown>;
    /**
     * How long this target's own check took (set by `checkEach`, components/shared/check-each.ts). Unset: the provider's whole
     * check is its time (a checker with one target, or one call for all of them).
     */
    durationMs?: number;
}

/** Checks that one provider entry can do its job. One Checker per entry in `egress:providers`. */
export interface Checker {
    readonly provider: string;
    /** The entry's kind (components/registry.ts). */
    readonly kind: string;
    /**
     * Never throws for a failing target: failures are verdicts. Should end when `signal` aborts (the
     * check timeout). A checker with several targets may hand each verdict to `onVerdict` as soon as it
     * is known, so one silent target does not hold back the verdicts of the others.
     */
    check(signal?: AbortSignal, onVerdict?: (verdict: CheckVerdict) => void): Promise<CheckVerdict[]>;
}

/**
 * Builds the Checker for an entry. `entry` comes from the decrypted stack config: secret fields are
 * plain strings here and must never be logged or put into verdicts.
 */
export type CheckerFactory<E = unknown> = (providerName: string, entry: E, options?: CheckerOptions) => Checker;

export interface CheckerOptions {
    /** Per-target timeout in milliseconds (`egress serve --provider-check-timeout`). @default 10000 */
    timeoutMs?: number;
    /** Overrides the API endpoint (tests point GCP/Kubernetes clients at a local server). */
    endpoint?: string;
    /** Where the check's debug lines go (a KVM check logs each virsh call). */
    log?: Logger;
}

/**
 * "Is this member gone?" per kind, for the service's reconcile loop: a cheap look at what really runs,
 * without an engine run. Answers member id → why it is gone, in words; members not in the map are
 * there as far as the hook can tell (their health still comes from probes). Never throws for a member:
 * a hook that cannot tell says nothing about it.
 */
export type GoneCheck = (members: readonly ProxyMember[], signal?: AbortSignal) => Promise<Map<string, string>>;

export interface GoneCheckContext<E = { type: string }> {
    /** The service's run dir (local proxies keep their files under `<runDir>/local/<stack>`). */
    runDir: string;
    /** The Pulumi project (libvirt object names and GCE/Kubernetes labels carry it). */
    project: string;
    stack: string;
    /** The stack's installation: only things it owns (model `ownedBy`) count as a member's. */
    installation: Installation;
    /** The provider entry, decrypted (secret fields are plain strings: never log them). */
    entry: E;
    /** Where the hook's debug lines go (KVM: each virsh call). */
    log?: Logger;
}

/** Something egress created, found by its labels/metadata (project, stack, pool, member). */
export interface ManagedThing {
    kind: string;
    provider: string;
    /** What sort of thing: `domain`, `volume`, `instance`, `address`, `firewall`, `template`, `deployment`, `service`, `secret`, `process`. */
    type: string;
    /** Provider-side name or ID, enough for `remove`. */
    name: string;
    /** Where it lives: host, zone or namespace. */
    location: string;
    pool?: string;
    member?: string;
}

/** Lists and removes managed things of one provider entry. */
export interface Collector {
    readonly provider: string;
    readonly kind: string;
    /**
     * Everything carrying labels for this project, stack and installation. A thing with our name but
     * another installation's id is never listed (and never removed): collectors skip it.
     */
    list(scope: OwnerScope): Promise<ManagedThing[]>;
    /** Removes one thing; succeeds when it is already gone. */
    remove(thing: ManagedThing): Promise<void>;
}

export type CollectorFactory<E = unknown> = (
    providerName: string,
    entry: E,
    options?: { endpoint?: string },
) => Collector;

/** Everything egress knows about one provider kind. Heavy parts are functions that `require` on use. */
export interface KindDefinition<E extends EntryBase = EntryBase, S extends z.ZodType = z.ZodType<E>> {
    /** The kind's name: the `type` of its provider entries. */
    readonly type: E["type"];
    /** The provider entry's schema (strict, with defaults). It must not load Pulumi or cloud SDKs. */
    readonly schema: S;
    /**
     * Rules a pool using an entry of this kind must follow (placement keys, zones, what the kind ignores).
     * `users` are all pools using the same entry, in config order (`pool` among them).
     */
    checkPool?(
        entry: E,
        pool: PoolConfig,
        at: (...p: (string | number)[]) => string,
        users: readonly PoolConfig[],
    ): ConfigProblem[];
    /**
     * Set when the entry fixes its members (kind `static`: one per listed proxy): a pool's `replicas` must
     * equal this, scale requests are refused and members are never replaced (nothing to replace them with).
     */
    fixedReplicas?(entry: E): number;
    /**
     * Credentials of each member's own proxy, by member index (kind `static`: a listed proxy's user and
     * password); called by the program on decrypted config. They reach the service as the secret output
     * `memberCredentials`, ahead of the pool's `auth`.
     */
    memberCredentials?(entry: E, pool: PoolConfig): (ProxyCredentials | undefined)[];
    /**
     * True when a pool can spread its members over stacks (`membersPerStack`, src/model/shards.ts): its
     * members need nothing the provider entry creates (`createProviderShared`), and what the pool creates
     * (`createPoolShared`) may be made once per stack, named by the engine rather than by the kind, so
     * each shard makes its own beside the installation stack's.
     */
    readonly shardable?: boolean;
    /** True when the kind's proxies run on the machine running egress (the service's loopback echo reaches them). */
    readonly onThisMachine?: boolean;
    /** Checks that need this machine's files, before an engine operation (config errors naming the path). */
    preflight?(providerName: string, entry: E): ConfigProblem[];
    /** The component module; loaded only by the program. */
    components(): ProviderKindModule<E, any, any>;
    /** Crash recovery, by resource type token: how to undo a pending create of that type. */
    pendingCreateUndo?(): Record<string, PendingCreateUndo>;
    /** Upgrades, by resource type token: how to hand a resource of an earlier release's shape over (HandOver). */
    handOver?(): Record<string, HandOver>;
    /**
     * Type tokens of resources members depend on that a change of config makes anew (KVM member
     * templates): a targeted `up` of members that needs one not yet made targets it too
     * (src/engine/shared-targets.ts), rather than failing on an untargeted create.
     */
    memberDependencyTypes?: readonly string[];
    /**
     * The kind's dynamic providers, by resource type token: what the engine's dynamic-provider process
     * runs for a resource whose state names that token (components/shared/dynamic.ts).
     */
    dynamicProviders?(): Record<string, pulumi.dynamic.ResourceProvider<any, any>>;
    /** The provider-health checker of one entry. */
    checker(providerName: string, entry: E, env: KindEnv, options?: CheckerOptions): Checker;
    /** "Is this member gone?" without an engine run (the reconcile loop); unset: only health probes judge. */
    goneCheck?(ctx: GoneCheckContext<E>): GoneCheck;
    /**
     * The `egress gc` collector of one entry; unset: the kind leaves nothing behind to collect. With
     * `collectOncePerStack`, only the first entry of the kind is collected (they share what they list).
     */
    collector?(providerName: string, entry: E, env: KindEnv): Collector;
    readonly collectOncePerStack?: boolean;
    /** `egress doctor` checks for the stack's entries of this kind (at least one). */
    doctor?(entries: { name: string; entry: E }[], env: DoctorEnv): DoctorFinding[];
}

/** Helps a kind's index.ts keep its entry type while the registry holds them side by side. */
export function defineKind<S extends z.ZodType<EntryBase>>(
    def: KindDefinition<z.output<S>, S>,
): KindDefinition<z.output<S>, S> {
    return def;
}
