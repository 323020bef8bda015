/**
 * Upgrading a stack made before the member resource (member-provider.ts): a member was an Overlay, a
 * SeedDisk and a Domain (`<member>-disk`, `<member>-seed`, `<member>-vm` under its KvmProxy). The engine
 * drops them from state (src/engine/hand-over.ts) and the member resource's create finds the running
 * domain on the same two volumes, under the same names, and adopts it: no VM restarts, nothing is
 * deleted. Nothing needs marking on the host, so this touches no host: the names are the member's alone
 * (installation prefix), and only a running domain on exactly those disks is adopted (any other is
 * replaced, as a gone member would be). A plain `pulumi up` on such a stack, without `egress up` first,
 * replaces the members.
 */
import type { HandOver } from "../kind";
import { DOMAIN_TYPE } from "./domain";
import { KVM_MEMBER_TYPE } from "./member-provider";
import { OVERLAY_TYPE } from "./overlay";
import { SEED_DISK_TYPE } from "./seed-disk";

/** The earlier types, and the suffix each added to its member's name. */
const OLD_TYPES: Record<string, string> = { [DOMAIN_TYPE]: "-vm", [OVERLAY_TYPE]: "-disk", [SEED_DISK_TYPE]: "-seed" };

/** `urn:…$egress:kvm:KvmProxy$pulumi-nodejs:dynamic/egress:kvm:Domain::web-0-vm` → its member resource's URN. */
export function kvmMemberUrnOf(childUrn: string): string | "" {
    const type = Object.keys(OLD_TYPES).find((t) => childUrn.includes(`$${t}::`));
    const chain = childUrn.slice(0, childUrn.lastIndexOf("$"));
    if (!type || !chain.endsWith("$egress:kvm:KvmProxy")) return "";
    const child = childUrn.slice(childUrn.lastIndexOf("::") + 2);
    if (!child.endsWith(OLD_TYPES[type])) return "";
    return `${chain}$${KVM_MEMBER_TYPE}::${child.slice(0, -OLD_TYPES[type].length)}`;
}

const handOverPart: HandOver = async (resource) => kvmMemberUrnOf(resource.urn);

export const kvmHandOvers: Record<string, HandOver> = Object.fromEntries(
    Object.keys(OLD_TYPES).map((t) => [t, handOverPart]),
);
