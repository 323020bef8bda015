import * as pulumi from "@pulumi/pulumi";
import { type AnyEntry, kindOf } from "./registry";
import { withEntryOptions } from "./shared/retain";
import { planMembers, type PoolConfig, type ProxyMember, type StackContext } from "../src/model";

export interface ProxyPoolArgs {
    /** The pool as validated from `egress:pools`. */
    pool: PoolConfig;
    /** Name of the provider entry the pool uses. */
    providerName: string;
    /** The provider entry, validated. */
    entry: AnyEntry;
    context: StackContext;
    /** What the kind's `createProviderShared` returned for this pool's provider entry (see src/program.ts). */
    providerShared?: unknown;
    /**
     * Register only these members (a targeted run's, src/program.ts ProgramScope): the engine keeps the
     * others as state has them. Unset: every member.
     */
    only?: ReadonlySet<string>;
    /** The shard stack this pool's members here live in (1 and up); unset in the installation's stack. */
    shard?: number;
}

/**
 * N members of one provider entry. Members are named `<pool>-<index>` and indices stay dense, so
 * scaling down removes the highest indices and a surviving member is never renamed or replaced.
 */
export class ProxyPool extends pulumi.ComponentResource {
    /** Live members, in index order. */
    declare public readonly members: pulumi.Output<ProxyMember[]>;

    constructor(name: string, args: ProxyPoolArgs, opts?: pulumi.ComponentResourceOptions) {
        // The entry's resource options (retainOnDelete) reach every child through the pool.
        super("egress:index:ProxyPool", name, {}, withEntryOptions(args.entry, opts));
        const kind = kindOf(args.entry).components();
        // Members get the kind's shared resources as `args.shared`; a kind without createPoolShared gets undefined.
        const shared: unknown = kind.createPoolShared?.(
            name,
            {
                pool: args.pool,
                providerName: args.providerName,
                entry: args.entry,
                context: args.context,
                providerShared: args.providerShared,
                ...(args.shard ? { shard: args.shard } : {}),
            },
            { parent: this },
        );
        const plans = planMembers(args.pool);
        const members = plans
            .filter((plan) => !args.only || args.only.has(plan.name))
            .map((plan) =>
                kind.createMember(
                    plan.name,
                    {
                        pool: args.pool.name,
                        providerName: args.providerName,
                        entry: args.entry,
                        plan,
                        context: args.context,
                        shared,
                    },
                    { parent: this },
                ),
            );
        (this as { members: pulumi.Output<ProxyMember[]> }).members = pulumi.all(members.map((m) => m.member));
        // Only the count goes to state: the stack output `proxies` lists every member already, and a second
        // copy here was ~150 bytes more per member in every checkpoint the engine rewrites (issue 33).
        this.registerOutputs({ size: plans.length });
    }
}
