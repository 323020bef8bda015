import type { GcpProviderConfig } from "./config";
import { GcpClientOptions, GcpComputeClient, labelFilter } from "./api";
import {
    stackLabels,
    type ProxyMember,
    INSTALLATION_LABEL,
    MEMBER_LABEL,
    memberLabelValue,
    ownedBy,
} from "../../src/model";
import type { GoneCheck, GoneCheckContext } from "../kind";
import { NO_RETRY } from "../shared/retry";

/**
 * Instance statuses of a member that no longer serves: stopped (by an operator, a spot preemption or
 * host maintenance with `onHostMaintenance: TERMINATE`) or suspended. GCE does not restart such an
 * instance by itself. Transitional and unknown statuses (PROVISIONING, STAGING, REPAIRING, DEPROVISIONING,
 * PENDING_STOP…) are not gone: they settle by the next round, and health probes cover them meanwhile.
 */
export const GCE_GONE_STATUSES: readonly string[] = ["TERMINATED", "STOPPED", "STOPPING", "SUSPENDED", "SUSPENDING"];

interface SeenInstance {
    name: string;
    status: string;
    zone: string;
}

/**
 * GCE: one paginated instance list per zone of the entry, filtered by the stack's labels; instances are
 * matched to members by their `egress-member` label. A member is gone when every instance carrying its
 * label is in a gone status, or none does. A zone that does not answer says nothing about the members
 * that could be in it: the member's recorded zone, or any zone when that one is not (or no longer) listed
 * in the entry. Options: where credentials come from and the API endpoint, as for the provider checker.
 */
export function gcpGoneCheck(ctx: GoneCheckContext<GcpProviderConfig>, options: GcpClientOptions = {}): GoneCheck {
    const entry = ctx.entry;
    // Listed by project and stack, then kept when this installation owns them (a stack made before
    // installation ids owns unlabelled ones too, until its next `up` labels them).
    const { [INSTALLATION_LABEL]: _, ...scope } = stackLabels({
        project: ctx.project,
        stack: ctx.stack,
        installation: ctx.installation.id,
    });
    const filter = labelFilter(scope);
    return async (members, signal) => {
        // A client per round, like the checker: its cached access token expires after an hour.
        const client = new GcpComputeClient(entry.project, { retry: NO_RETRY, ...options });
        const perZone = await Promise.all(
            entry.zones.map(async (zone) => {
                try {
                    const items = await client.listAll(`zones/${zone}/instances`, { filter }, undefined, signal);
                    return {
                        zone,
                        instances: items
                            .filter(({ item }) => ownedBy(item.labels?.[INSTALLATION_LABEL], ctx.installation))
                            .map(({ item }) => ({
                                name: String(item.name),
                                status: String(item.status),
                                zone,
                                label: item.labels?.[MEMBER_LABEL],
                            })),
                    };
                } catch {
                    return { zone, instances: undefined };
                }
            }),
        );
        const silent = new Set(perZone.filter((z) => !z.instances).map((z) => z.zone));
        const byLabel = new Map<string, SeenInstance[]>();
        for (const z of perZone)
            for (const i of z.instances ?? []) if (i.label) byLabel.set(i.label, [...(byLabel.get(i.label) ?? []), i]);

        const gone = new Map<string, string>();
        for (const m of members) {
            if (zonesOf(m, entry).some((z) => silent.has(z))) continue;
            const label = memberLabelValue(m);
            const seen = byLabel.get(label) ?? [];
            if (!seen.length) {
                gone.set(
                    m.id,
                    `no instance labelled ${MEMBER_LABEL}=${label} in ${zonesText(zonesOf(m, entry))} of project ${entry.project}`,
                );
            } else if (seen.every((i) => GCE_GONE_STATUSES.includes(i.status))) {
                gone.set(m.id, seen.map((i) => `instance ${i.name} is ${i.status} in zone ${i.zone}`).join("; "));
            }
        }
        return gone;
    };
}

/** Where a member's instance can be: the zone it was created in (gcp-proxy.ts pins it), else anywhere in the entry. */
function zonesOf(m: ProxyMember, entry: GcpProviderConfig): string[] {
    return entry.zones.includes(m.zone) ? [m.zone] : entry.zones;
}

function zonesText(zones: string[]): string {
    return zones.length === 1 ? `zone ${zones[0]}` : `zones ${zones.join(", ")}`;
}
