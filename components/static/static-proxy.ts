import * as pulumi from "@pulumi/pulumi";
import type { StaticProviderConfig } from "./config";
import { parseStaticProxy } from "./config";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";

/** Arguments of a StaticProxy: the common member arguments with a `static` provider entry. */
export type StaticProxyArgs = MemberArgs<StaticProviderConfig>;

/** The listed proxy a member stands for: member `i` is `proxies[i]` (config makes `replicas` the list's length). */
function target(args: StaticProxyArgs) {
    const listed = args.entry.proxies[args.plan.index];
    if (listed === undefined)
        throw new Error(
            `static member ${args.plan.name}: provider \`${args.providerName}\` lists ${args.entry.proxies.length} proxies, none at index ${args.plan.index}`,
        );
    const t = parseStaticProxy(listed);
    if (!t)
        throw new Error(
            `static member ${args.plan.name}: proxies[${args.plan.index}] of provider \`${args.providerName}\` is still encrypted; run through Pulumi so secrets are decrypted`,
        );
    return t;
}

/**
 * A proxy that already exists (`type: static`): no children, nothing created or deleted. It publishes the
 * listed proxy's address as a member like any other kind's, without its credentials: a listed proxy with
 * credentials is marked `auth`, and its credentials travel as the secret output `memberCredentials`
 * (staticMemberCredentials), ahead of the pool's `auth`.
 */
export class StaticProxy extends ProxyMemberComponent {
    constructor(name: string, args: StaticProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        const t = target(args);
        // The plan's `auth` only marks the member `auth: true` here; nothing publishes the credentials.
        const plan = { ...args.plan, port: t.port, ...(t.auth ? { auth: t.auth } : {}) };
        super("egress:static:StaticProxy", name, memberIdentity({ ...args, plan }, t.zone), opts);
        this.publish({ ...args, plan }, t.host, t.port, t.zone, t.scheme);
    }
}
