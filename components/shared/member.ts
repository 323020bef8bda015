import * as pulumi from "@pulumi/pulumi";
import type { MemberPlan } from "../../src/model/plan";
import type { ProxyMember, StackContext } from "../../src/model";
import { MemberIdentity, memberDelta, memberUrl } from "../../src/model/member-state";

/**
 * Arguments every member component takes, whatever its kind: `(name, args, opts)`. Kinds narrow `entry`
 * to their own config and `shared` to what their `createPoolShared` returns.
 */
export interface MemberArgs<E extends { type: string } = { type: string }, S = unknown> {
    /** Pool the member belongs to. */
    pool: string;
    /** Name of the provider entry in `egress:providers`. */
    providerName: string;
    /** The provider entry, validated. */
    entry: E;
    /** The member after per-member overrides. */
    plan: MemberPlan;
    context: StackContext;
    /** What the kind's `createPoolShared` returned for the member's pool (undefined for a kind without it). */
    shared: S;
}

/**
 * What a member component records as its *inputs* when it is registered, before any child exists: who
 * it is. Its address arrives later, in the `member` output. When an update is cancelled or killed
 * between a child's create and that output, state still knows the member from this and the child's own
 * outputs (src/engine/checkpoint.ts membersOf).
 */
export function memberIdentity(
    args: MemberArgs<any, any>,
    zone: string,
): { identity: Omit<ProxyMember, "host" | "url"> } {
    return {
        identity: {
            id: args.plan.name,
            pool: args.pool,
            provider: args.providerName,
            kind: args.entry.type,
            index: args.plan.index,
            port: args.plan.port,
            zone,
            ...(args.plan.auth ? { auth: true } : {}),
        },
    };
}

/**
 * Base of every `*Proxy` component: subclasses create their children, then call `publish` with the
 * address the proxy answers on. Keeps the output shape in one place.
 */
export abstract class ProxyMemberComponent extends pulumi.ComponentResource {
    /** The member as crawlers see it. */
    declare public readonly member: pulumi.Output<ProxyMember>;
    /** What the component's inputs say of its member (memberIdentity): its `member` output leaves that out. */
    private readonly identity: MemberIdentity;

    constructor(
        type: string,
        name: string,
        inputs: { identity: MemberIdentity },
        opts?: pulumi.ComponentResourceOptions,
    ) {
        super(type, name, inputs, opts);
        this.identity = inputs.identity;
    }

    /**
     * `scheme` is how clients talk to the proxy itself: `https` for a proxy that takes TLS (default `http`).
     * `labels`: what the kind knows of the member beyond its zone (a GCE zone's `region`), for crawlers'
     * label selectors (src/model/labels.ts); left out of the output when empty, so other kinds' is as before.
     */
    protected publish(
        args: MemberArgs<any, any>,
        host: pulumi.Input<string>,
        port: pulumi.Input<number>,
        zone: pulumi.Input<string>,
        scheme: "http" | "https" = "http",
        labels: Record<string, string> = {},
    ): void {
        const member = pulumi.all([host, port, zone]).apply(([h, p, z]) => ({
            id: args.plan.name,
            pool: args.pool,
            provider: args.providerName,
            kind: args.entry.type as string,
            index: args.plan.index,
            host: h,
            port: p,
            // No address yet (a KVM guest still booting): no URL, so nobody dials `http://:3128`.
            url: memberUrl(h, p, scheme),
            zone: z,
            ...(Object.keys(labels).length > 0 ? { labels } : {}),
            ...(args.plan.auth ? { auth: true } : {}),
        }));
        (this as { member: pulumi.Output<ProxyMember> }).member = member;
        // State keeps what the identity input does not say (src/model/member-state.ts): bytes per member.
        this.registerOutputs({ member: member.apply((m) => memberDelta(m, this.identity)) });
    }
}
