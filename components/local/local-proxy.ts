import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { LocalProviderConfig } from "./config";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import { LocalProxyProcess } from "./provider";
import { clearSecret } from "../../src/model/fields";

/** Arguments of a LocalProxy: the common member arguments with a `local` provider entry. */
export type LocalProxyArgs = MemberArgs<LocalProviderConfig>;

/**
 * A proxy running as a detached process on this machine's loopback (`type: local`).
 * Needs nothing installed; the process outlives the engine run and is stopped on delete.
 */
export class LocalProxy extends ProxyMemberComponent {
    constructor(name: string, args: LocalProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        super("egress:local:LocalProxy", name, memberIdentity(args, "local"), opts);
        // With a basePort, member i gets basePort+i (stable, predictable); otherwise the kernel picks.
        const requestedPort = args.entry.basePort !== undefined ? args.entry.basePort + args.plan.index : 0;
        const proc = new LocalProxyProcess(
            `${name}-process`,
            {
                member: `${args.context.stack}-${args.plan.name}`,
                requestedPort,
                stateDir: path.join(args.context.stateDir, "local", args.context.stack),
                installation: { id: args.context.installation.id, legacy: args.context.installation.legacy },
                // Only when shared: state of one-process members stays as it was (an upgrade changes nothing).
                ...((args.entry.membersPerProcess ?? 1) > 1 ? { membersPerProcess: args.entry.membersPerProcess } : {}),
                ...(args.plan.auth
                    ? {
                          auth: pulumi.secret({
                              username: args.plan.auth.username,
                              password: clearSecret(args.plan.auth.password, "auth.password"),
                          }),
                      }
                    : {}),
            },
            // Delete before replace, as a resource option: `up --replace` (heal, rotation) never asks the
            // provider's diff, and a member's files and shared-host listener go by its name, which the
            // replacement keeps (with a basePort, its port too). The create stops the old one first anyway.
            { parent: this, deleteBeforeReplace: true },
        );
        this.publish(args, proc.host, proc.port, "local");
    }
}
