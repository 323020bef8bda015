import * as pulumi from "@pulumi/pulumi";
import * as gcp from "@pulumi/gcp";
import type { GcpProviderConfig } from "./config";
import { memberLabels } from "../../src/model";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import { networkUrl, regionOf, subnetworkUrl } from "./names";
import type { GcpPoolShared } from "./shared";
import { GcpMember } from "./member-provider";
import { gcpZone, templateFor } from "./pool-templates";

/** Arguments of a GcpProxy: the common member arguments with a `gcp` provider entry. */
export type GcpProxyArgs = MemberArgs<GcpProviderConfig, GcpPoolShared>;

/**
 * One proxy on a Compute Engine instance with an external IPv4 address, made from its pool's instance
 * template (pool-templates.ts) and kept in state as one `egress:gcp:Member` (member-provider.ts). The
 * instance runs the member's cloud-init (the template's `user-data` metadata key) byte for byte; the
 * pool's firewall admits the allowed ranges.
 */
export class GcpProxy extends ProxyMemberComponent {
    /** The member's instance. */
    public readonly instance: GcpMember;
    /** The reserved address, when the entry sets `staticAddress`. */
    public readonly address?: gcp.compute.Address;

    constructor(name: string, args: GcpProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        const { entry, plan, shared } = args;
        const zone = gcpZone(entry, plan);
        super("egress:gcp:GcpProxy", name, memberIdentity(args, zone), opts);
        const tpl = templateFor(shared.templates, shared.owner, plan, shared.opts);

        if (entry.staticAddress) {
            this.address = new gcp.compute.Address(
                `${name}-ip`,
                {
                    region: regionOf(zone),
                    addressType: "EXTERNAL",
                    labels: memberLabels(args.context, args.pool, plan.name),
                },
                { parent: this, provider: shared.provider },
            );
        }
        // Its own interface only with a static address (the template's serves the others), in the URL
        // forms instances.insert takes: the gcp provider expanded bare names for the template, not here.
        const nic = this.address?.address.apply((natIp) => ({
            network: networkUrl(entry.network),
            ...(entry.subnetwork ? { subnetwork: subnetworkUrl(entry.subnetwork, regionOf(zone)) } : {}),
            natIp,
        }));
        const ref = { project: entry.project, zone, name, tpl: tpl.name };
        this.instance = new GcpMember(
            name,
            { member: nic ? nic.apply((n) => ({ ...ref, nic: n })) : ref },
            {
                parent: this,
                // The template by name and dependsOn: one dependency in state, not one per property too.
                dependsOn: [tpl.resource],
                // A static address serves one instance at a time: the old one goes before the new one comes.
                deleteBeforeReplace: entry.staticAddress,
            },
        );
        const host = this.instance.ip.apply((ip) => ip ?? "");
        // The region is what a GCE zone says beyond itself (`_region_europe-west1` in a gateway username).
        this.publish(args, host, plan.port, zone, "http", { region: regionOf(zone) });
    }
}
