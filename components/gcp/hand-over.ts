/**
 * Upgrading a stack made before the member resource (member-provider.ts): its members' instances are in
 * state as the gcp provider's `gcp:compute/instance:Instance` (`<member>-vm` under its GcpProxy). The live
 * instance gets ADOPT_LABEL; the engine drops the old resource from state (src/engine/hand-over.ts), and
 * the member resource's create then takes the marked instance over, when it is what the pool's template
 * makes (machine type, user-data): no instance restarts, none is replaced. A static address keeps its own
 * resource, as before. A plain `pulumi up` on such a stack, without `egress up` first, replaces the members.
 */
import type { HandOver } from "../kind";
import { ADOPT_LABEL, idParts, readInstance, setLabels } from "./member-instance";
import { clientFor, gcpCredentialsOf, GCP_MEMBER_TYPE } from "./member-provider";

const OLD_TYPE = "gcp:compute/instance:Instance";
const OLD_SUFFIX = "-vm";

/** `urn:…$egress:gcp:GcpProxy$gcp:compute/instance:Instance::web-0-vm` → its member resource's URN. */
export function gcpMemberUrnOf(childUrn: string): string | "" {
    const chain = childUrn.slice(0, childUrn.lastIndexOf("$"));
    const child = childUrn.slice(childUrn.lastIndexOf("::") + 2);
    if (!childUrn.includes(`$${OLD_TYPE}::`) || !chain.endsWith("$egress:gcp:GcpProxy")) return "";
    if (!child.endsWith(OLD_SUFFIX)) return "";
    return `${chain}$${GCP_MEMBER_TYPE}::${child.slice(0, -OLD_SUFFIX.length)}`;
}

/** Marks the instance for its member to adopt. One deleted behind egress's back is handed over all the same. */
const handOverInstance: HandOver = async (resource, _provider, config) => {
    const successor = gcpMemberUrnOf(resource.urn);
    if (!successor) return "";
    const { project, zone, name } = idParts(resource.id);
    // The credentials the member resource will use: the stack config's, as the gcp provider reads them.
    const client = clientFor(project, gcpCredentialsOf(config));
    const now = await readInstance(client, zone, name);
    if (now && now.labels[ADOPT_LABEL] !== "true")
        await setLabels(client, zone, name, { ...now.labels, [ADOPT_LABEL]: "true" });
    return successor;
};

export const gcpHandOvers: Record<string, HandOver> = { [OLD_TYPE]: handOverInstance };
