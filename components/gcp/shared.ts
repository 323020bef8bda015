import * as pulumi from "@pulumi/pulumi";
import * as gcp from "@pulumi/gcp";
import { planMembers } from "../../src/model";
import type { GcpProviderConfig } from "./config";
import type { PoolSharedArgs } from "../kind";
import { firewallDescription, firewallPorts, poolNetworkTag, poolResourceName, splitByFamily } from "./names";

/** What a pool hands to each of its GCE members. */
export interface GcpPoolShared {
    /** Explicit provider bound to the entry's project, so entries for different projects coexist in one stack. */
    provider: gcp.Provider;
    /** Network tag of the pool; the firewall targets it. */
    networkTag: string;
    /** Ingress rules of the pool (one per address family present in `allowedSourceRanges`; none when the pool is empty). */
    firewalls: gcp.compute.Firewall[];
}

/**
 * Creates the pool's provider and firewall. The firewall opens exactly the TCP ports the pool's members
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
    if (ports.length > 0) {
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
    return { provider, networkTag, firewalls };
}
