import * as pulumi from "@pulumi/pulumi";
import type { MemberPlan, ProviderConfig } from "../src/config";

/** What every proxy member publishes, whatever runs it. This is one element of the stack output `proxies`. */
export interface ProxyMember {
    /** `<pool>-<index>`: stable across scaling. */
    id: string;
    pool: string;
    provider: string;
    kind: ProviderConfig["type"];
    index: number;
    host: string;
    port: number;
    /** `http://host:port` — what a crawler sets as its proxy; "" while the host is not known yet. */
    url: string;
    zone: string;
    /**
     * True when the proxy requires the pool's credentials (pool `auth`). The credentials themselves are
     * never part of a member: they travel only as the secret stack output `credentials`.
     */
    auth?: boolean;
}

/** Facts about the stack every member needs (labels for `egress gc`, where local state lives). */
export interface StackContext {
    project: string;
    stack: string;
    /** Project root: cloud-init files are read relative to it. */
    projectRoot: string;
    /** Directory for machine-local runtime state (local proxy pid and log files). */
    stateDir: string;
}

/** Arguments every member component takes; kinds narrow `entry` to their own config. */
export interface MemberArgs<E extends ProviderConfig = ProviderConfig> {
    /** Pool the member belongs to. */
    pool: string;
    /** Name of the provider entry in `egress:providers`. */
    providerName: string;
    /** The provider entry, validated. */
    entry: E;
    /** The member after per-member overrides. */
    plan: MemberPlan;
    context: StackContext;
}

/** A label value GCE and Kubernetes both accept; `egress gc` cleans its filters the same way. */
function labelValue(s: string): string {
    return s.toLowerCase().replace(/[^a-z0-9_-]/g, "-").slice(0, 63);
}

/** Labels naming the stack: `egress gc` lists by these, so every managed resource carries them. */
export function stackLabels(project: string, stack: string): Record<string, string> {
    return { "egress-project": labelValue(project), "egress-stack": labelValue(stack) };
}

/** Labels of pool-level resources: those of a member without `egress-member`, so member selectors never match them. */
export function poolLabels(ctx: StackContext, pool: string): Record<string, string> {
    return { ...stackLabels(ctx.project, ctx.stack), "egress-pool": labelValue(pool) };
}

/**
 * Labels carried by every managed resource so `egress gc` can find what state does not know.
 * Values are DNS-label safe (GCE and Kubernetes both restrict label values).
 */
export function memberLabels(ctx: StackContext, pool: string, member: string): Record<string, string> {
    return { ...poolLabels(ctx, pool), "egress-member": labelValue(member) };
}

/**
 * What a member component records as its *inputs* when it is registered, before any child exists: who
 * it is. Its address arrives later, in the `member` output. When an update is cancelled or killed
 * between a child's create and that output, state still knows the member from this and the child's own
 * outputs (src/engine/checkpoint.ts membersOf).
 */
export function memberIdentity(args: MemberArgs, zone: string): { identity: Omit<ProxyMember, "host" | "url"> } {
    return { identity: { id: args.plan.name, pool: args.pool, provider: args.providerName, kind: args.entry.type, index: args.plan.index, port: args.plan.port, zone, ...(args.plan.auth ? { auth: true } : {}) } };
}

/**
 * Base of every `*Proxy` component: subclasses create their children, then call `publish` with the
 * address the proxy answers on. Keeps the output shape in one place.
 */
export abstract class ProxyMemberComponent extends pulumi.ComponentResource {
    /** The member as crawlers see it. */
    declare public readonly member: pulumi.Output<ProxyMember>;

    protected publish(args: MemberArgs, host: pulumi.Input<string>, port: pulumi.Input<number>, zone: pulumi.Input<string>): void {
        const member = pulumi.all([host, port, zone]).apply(([h, p, z]) => ({
            id: args.plan.name,
            pool: args.pool,
            provider: args.providerName,
            kind: args.entry.type,
            index: args.plan.index,
            host: h,
            port: p,
            // No address yet (a KVM guest still booting): no URL, so nobody dials `http://:3128`.
            url: h ? `http://${h}:${p}` : "",
            zone: z,
            ...(args.plan.auth ? { auth: true } : {}),
        }));
        (this as { member: pulumi.Output<ProxyMember> }).member = member;
        this.registerOutputs({ member });
    }
}
