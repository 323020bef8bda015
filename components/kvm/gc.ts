/**
 * `egress gc` for `type: kvm`: finds domains named with the installation's prefix
 * (`egress-<installation id>-`, naming.ts) that carry its egress metadata, and per-member volumes and
 * pools' member templates under the same prefix, on every host of the entry.
 * Base images are a shared cache and are never listed. `remove` tolerates things already gone.
 */
import type { KvmProviderConfig } from "./config";
import type { Collector, CollectorFactory, ManagedThing } from "../kind";
import { isNotFound, listDomains, listVolumes, Virsh, withLibvirt } from "./libvirt";
import {
    connectionFor,
    KvmHost,
    memberOfVolume,
    METADATA_NS,
    poolOfTemplateVolume,
    privateKeyText,
    installationPrefix,
} from "./naming";
import { parseMetadata } from "./xml";
import { legacyInstallationId } from "../../src/model/installation";
import { removeDomain } from "./domain";
import { deleteVolume } from "./volumes";

export const kvmCollector: CollectorFactory<KvmProviderConfig> = (providerName, entry) => {
    const host = (name: string): KvmHost => {
        const h = entry.hosts.find((x) => x.name === name);
        if (!h) throw new Error(`host \`${name}\` is not in provider \`${providerName}\``);
        return h;
    };
    const onHost = <T>(h: KvmHost, fn: (virsh: Virsh) => Promise<T>) =>
        withLibvirt(connectionFor(entry, h), privateKeyText(entry), fn);
    const collector: Collector = {
        provider: providerName,
        kind: "kvm",
        async list(scope) {
            const prefix = installationPrefix(scope.installation);
            const found: ManagedThing[] = [];
            const legacyId = legacyInstallationId(scope.project, scope.stack);
            for (const h of entry.hosts) {
                await onHost(h, async (virsh) => {
                    // Our domains are named `<installation prefix><member>`: others' (the host may run anything) are never asked.
                    // Members whose domain here belongs to another installation: their volumes are its disks.
                    const foreign = new Set<string>();
                    for (const name of (await listDomains(virsh)).filter((n) => n.startsWith(prefix))) {
                        // `metadata --uri` (not dumpxml: virsh 9.0 over libssh crashed on `dumpxml --inactive`
                        // of a running domain here). Domains without our element fail: not ours.
                        const xml = await virsh(["metadata", name, "--uri", METADATA_NS, "--config"]).catch((e) => {
                            if (isNotFound(e)) return "";
                            throw e;
                        });
                        const m = parseMetadata(xml, METADATA_NS);
                        // Only domains carrying our id, or none at all for a stack made before ids (whose prefix
                        // is that id): a same-named member of another installation is never listed.
                        if (
                            m &&
                            m.project === scope.project &&
                            m.stack === scope.stack &&
                            (m.installation ?? legacyId) !== scope.installation
                        )
                            foreign.add(m.member);
                        else if (m && m.project === scope.project && m.stack === scope.stack)
                            found.push({
                                kind: "kvm",
                                provider: providerName,
                                type: "domain",
                                name,
                                location: h.name,
                                pool: m.pool,
                                member: m.member,
                            });
                    }
                    for (const vol of await listVolumes(virsh, h.storagePool)) {
                        const volume = { kind: "kvm", provider: providerName, type: "volume", location: h.name };
                        const name = `${h.storagePool}/${vol}`;
                        // A pool's member template (member-template.ts): no member's, but the installation's.
                        const tplPool = poolOfTemplateVolume(prefix, vol);
                        const member = memberOfVolume(prefix, vol);
                        if (tplPool !== undefined) found.push({ ...volume, name, pool: tplPool });
                        else if (member !== undefined && !foreign.has(member))
                            found.push({ ...volume, name, member, pool: member.replace(/-\d+$/, "") });
                    }
                });
            }
            return found;
        },
        async remove(thing) {
            await onHost(host(thing.location), async (virsh) => {
                if (thing.type === "domain") return removeDomain(virsh, thing.name);
                if (thing.type === "volume") {
                    const [pool, ...rest] = thing.name.split("/");
                    return deleteVolume(virsh, pool, rest.join("/"));
                }
                throw new Error(`kvm collector cannot remove a \`${thing.type}\``);
            });
        },
    };
    return collector;
};
