import * as pulumi from "@pulumi/pulumi";
import * as gcp from "@pulumi/gcp";
import { planMembers } from "../../src/model";
import type { GcpProviderConfig } from "./config";
import type { PoolSharedArgs } from "../kind";
import { firewallDescription, firewallPorts, poolNetworkTag, poolResourceName, splitByFamily } from "./names";
import { createPoolTemplates, TemplateOwner } from "./pool-templates";

/** What a pool hands to each of its GCE members. */
export interface GcpPoolShared {
    /** Explicit provider bound to the entry's project, so entries for different projects coexist in one stack. */
    provider: gcp.Provider;
    /** Network tag of the pool; the firewall targets it. */
    networkTag: string;
    /** Ingress rules of the pool (one per address family present in `allowedSourceRanges`; none when the pool is empty). */
    firewalls: gcp.compute.Firewall[];
    /** Its members' instance templates by name (pool-templates.ts), one per distinct content. */
    templates: Map<string, gcp.compute.InstanceTemplate>;
    /** Whose the templates are, and how to make one. */
    owner: TemplateOwner;
    /** Options the templates were made with (the pool's parent). */
    opts: pulumi.ComponentResourceOptions;
}

/**
 * Creates the pool's provider, firewall and instance templates (pool-templates.ts). A shard stack
 * (src/model/shards.ts) makes its own provider and templates (named apart), and no firewall. The firewall opens exactly the TCP ports the pool's members
 * listen on (per-member overrides included), only to `allowedSourceRanges`, only on instances with the
 * pool's tag. A pool with no members gets no rule: a GCE rule with an empty port list would open every port.
 */
export function createGcpPoolShared(
    name: string,
    args: PoolSharedArgs<GcpProviderConfig>,
    opts: pulumi.ComponentResourceOptions,
): GcpPoolShared {
    const { entry, pool, context } = args;
    const provider = new gcp.Provider(
        `${name}-gcp`,
        {
            project: entry.project,
            // The attribution label would be one more label to keep in step with memberLabels; GC does not need it.
            addPulumiAttributionLabel: false,
        },
        opts,
    );
    const networkTag = poolNetworkTag(context, pool.name);
    const ports = firewallPorts(planMembers(pool).map((m) => m.port));
    const firewalls: gcp.compute.Firewall[] = [];
    // A shard's members carry the pool's tag, whose rule (every member's port) is the installation stack's.
    if (ports.length > 0 && !args.shard) {
        const families = splitByFamily(entry.allowedSourceRanges);
        for (const [family, ranges] of Object.entries(families) as ["v4" | "v6", string[]][]) {
            if (ranges.length === 0) continue;
            const suffix = family === "v6" ? "v6" : "";
            firewalls.push(
                new gcp.compute.Firewall(
                    `${name}-fw${suffix ? "-" + suffix : ""}`,
                    {
                        // An explicit name lets `egress gc` find the rule; deleteBeforeReplace below keeps replacements possible.
                        name: poolResourceName(context, pool.name, suffix),
                        description: firewallDescription(context, pool.name),
                        network: entry.network,
                        direction: "INGRESS",
                        sourceRanges: ranges,
                        targetTags: [networkTag],
                        allows: [{ protocol: "tcp", ports }],
                    },
                    { ...opts, provider, deleteBeforeReplace: true },
                ),
            );
        }
    }
    const owner: TemplateOwner = { entry, pool: pool.name, context, provider, networkTag, shard: args.shard };
    const templates = new Map<string, gcp.compute.InstanceTemplate>();
    createPoolTemplates(templates, owner, args, opts);
    return { provider, networkTag, firewalls, templates, owner, opts };
}
