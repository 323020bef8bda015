import type { GcpProviderConfig } from "./config";
import { GcpClientOptions, GcpComputeClient, labelFilter } from "./api";
import { parseFirewallDescription } from "./names";
import type { Collector, CollectorFactory, ManagedThing } from "../kind";
import { stackLabels } from "../../src/model";

const lastSegment = (url: string | undefined) => (url ?? "").split("/").pop() ?? "";

/**
 * Finds and removes what egress created in the entry's GCP project: instances and addresses by their
 * `egress-project`/`egress-stack`/`egress-installation` labels (in every zone and region, so orphans in zones no longer listed in
 * the config are found too), and firewall rules, which carry no labels, by their description (which
 * names the installation too), and instance templates by the labels they give their instances. Options: the
 * endpoint plus where credentials come from (see docs/gcp.md).
 */
export function gcpCollector(
    providerName: string,
    entry: GcpProviderConfig,
    options: GcpClientOptions = {},
): Collector {
    const client = new GcpComputeClient(entry.project, options);
    const thing = (type: string, name: string, location: string, pool?: string, member?: string): ManagedThing => ({
        kind: "gcp",
        provider: providerName,
        type,
        name,
        location,
        ...(pool ? { pool } : {}),
        ...(member ? { member } : {}),
    });

    return {
        provider: providerName,
        kind: "gcp",

        async list(scope) {
            // The installation label is in the filter: a same-named stack of another installation is never listed.
            const filter = labelFilter(stackLabels(scope));
            const [instances, addresses, firewalls, templates] = await Promise.all([
                client.listAll("aggregated/instances", { filter }, "instances"),
                client.listAll("aggregated/addresses", { filter }, "addresses"),
                client.listAll("global/firewalls", { filter: 'name eq "egress-.*"' }),
                client.listAll("global/instanceTemplates", { filter: 'name eq "egress-.*"' }),
            ]);
            const out: ManagedThing[] = [];
            for (const { item } of instances)
                out.push(
                    thing(
                        "instance",
                        item.name,
                        lastSegment(item.zone),
                        item.labels?.["egress-pool"],
                        item.labels?.["egress-member"],
                    ),
                );
            for (const { item } of addresses)
                out.push(
                    thing(
                        "address",
                        item.name,
                        lastSegment(item.region),
                        item.labels?.["egress-pool"],
                        item.labels?.["egress-member"],
                    ),
                );
            for (const { item } of firewalls) {
                const owner = parseFirewallDescription(item.description);
                // The name filter is only a pre-filter; the description says whose rule it is.
                if (
                    owner &&
                    owner.project === scope.project &&
                    owner.stack === scope.stack &&
                    owner.installation === scope.installation
                )
                    out.push(thing("firewall", item.name, "global", owner.pool));
            }
            // Instance templates (pool-templates.ts) carry the pool's labels in their properties; the list
            // cannot filter on those, so the name pre-filters and the labels decide.
            const wanted = stackLabels(scope);
            for (const { item } of templates) {
                const l = item.properties?.labels ?? {};
                if (Object.entries(wanted).every(([k, v]) => l[k] === v))
                    out.push(thing("template", item.name, "global", l["egress-pool"]));
            }
            return out;
        },

        async remove(t) {
            const path = removalPath(t);
            if (!path) throw new Error(`gcp collector for \`${providerName}\` cannot remove a \`${t.type}\``);
            // Already gone (404) counts as removed.
            await client.delete(path);
        },
    };
}

/** The API path that deletes a thing `list` found, by its type; undefined for a type it never lists. */
function removalPath(t: ManagedThing): string | undefined {
    switch (t.type) {
        case "instance":
            return `zones/${t.location}/instances/${t.name}`;
        case "address":
            return `regions/${t.location}/addresses/${t.name}`;
        case "firewall":
            return `global/firewalls/${t.name}`;
        case "template":
            return `global/instanceTemplates/${t.name}`;
        default:
            return undefined;
    }
}

/** `gcpCollector` is a CollectorFactory; this line keeps it one. */
const _gcpCollectorFactory: CollectorFactory<GcpProviderConfig> = gcpCollector;
