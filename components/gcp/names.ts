/**
 * Pure naming and planning for the GCE kind: no Pulumi resources here, so everything is tested directly.
 */
import { createHash } from "node:crypto";
import type { StackContext } from "../../src/model";

/** Region of a zone: `europe-west1-b` → `europe-west1`. */
export function regionOf(zone: string): string {
    return zone.replace(/-[a-z]$/, "");
}

/** A network as instances.insert takes it: a bare name (`default`) becomes `global/networks/<name>`; a URL stays. */
export function networkUrl(network: string): string {
    return network.includes("/") ? network : `global/networks/${network}`;
}

/** A subnetwork as instances.insert takes it: a bare name becomes `regions/<region>/subnetworks/<name>`. */
export function subnetworkUrl(subnetwork: string, region: string): string {
    return subnetwork.includes("/") ? subnetwork : `regions/${region}/subnetworks/${subnetwork}`;
}

/** Unlike a label value (src/model/member.ts labelValue), a GCE name has no `_` and no length cut here. */
function clean(s: string): string {
    return s.toLowerCase().replace(/[^a-z0-9-]/g, "-");
}

/**
 * A GCE name (RFC 1035, at most 63 characters) for something one pool owns: readable prefix plus a hash of
 * installation, project, stack and pool, so two stacks, two Pulumi projects or two installations with
 * the same stack name sharing a GCP project never collide. A stack made before installation ids hashes
 * project, stack and pool only, as then: its names (and firewall rules) stay.
 */
export function poolResourceName(ctx: StackContext, pool: string, suffix = ""): string {
    const owner = ctx.installation.legacy ? "" : `${ctx.installation.id}\0`;
    const hash = createHash("sha256")
        .update(`${owner}${ctx.project}\0${ctx.stack}\0${pool}\0${suffix}`)
        .digest("hex")
        .slice(0, 6);
    const readable = `egress-${clean(ctx.stack)}-${clean(pool)}${suffix ? "-" + suffix : ""}`.slice(0, 63 - 7);
    return `${readable}-${hash}`;
}

/** Network tag every member of the pool carries; the pool's firewall targets it. */
export function poolNetworkTag(ctx: StackContext, pool: string): string {
    return poolResourceName(ctx, pool);
}

/**
 * Firewall rules carry no labels in GCE, so `egress gc` recognises them by this description.
 * Keep the format in step with parseFirewallDescription.
 */
export function firewallDescription(ctx: StackContext, pool: string): string {
    return `managed by egress: project=${ctx.project} stack=${ctx.stack} pool=${pool} installation=${ctx.installation.id}`;
}

/**
 * Reads back firewallDescription; undefined for anything egress did not write. A rule written before
 * installation ids has no `installation` (its stack's next `up` rewrites the description in place).
 */
export function parseFirewallDescription(
    d: string | undefined,
): { project: string; stack: string; pool: string; installation?: string } | undefined {
    const m = /^managed by egress: project=(\S+) stack=(\S+) pool=(\S+)(?: installation=([0-9a-f]{8}))?$/.exec(d ?? "");
    return m ? { project: m[1], stack: m[2], pool: m[3], ...(m[4] ? { installation: m[4] } : {}) } : undefined;
}

/**
 * GCE firewall rules hold either IPv4 or IPv6 source ranges, never both, so a mixed list becomes two rules.
 */
export function splitByFamily(ranges: readonly string[]): { v4: string[]; v6: string[] } {
    return { v4: ranges.filter((r) => !r.includes(":")), v6: ranges.filter((r) => r.includes(":")) };
}

/** The distinct member ports as GCE wants them (strings), ascending. */
export function firewallPorts(ports: readonly number[]): string[] {
    return [...new Set(ports)].sort((a, b) => a - b).map(String);
}
