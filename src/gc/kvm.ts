/**
 * `egress gc` for `type: kvm`: finds domains carrying egress metadata for a project+stack, and per-member
 * volumes whose names carry the stack's prefix (`egress-<hash>-…`), on every host of the entry.
 * Base images are a shared cache and are never listed. `remove` tolerates things already gone.
 */
import type { KvmProviderConfig } from "../config/providers/kvm";
import type { Collector, CollectorFactory, ManagedThing } from "./types";
import { withLibvirt } from "../../components/kvm/libvirt";
import { connectionFor, KvmHost, METADATA_NS, privateKeyText, stackPrefix } from "../../components/kvm/naming";
import { parseMetadata } from "../../components/kvm/xml";
import { removeDomain } from "../../components/kvm/domain";
import { deleteVolume } from "../../components/kvm/volumes";
import { isNotFound, listVolumes } from "../../components/kvm/libvirt";

/** Member name inside a per-member volume name (`egress-<hash>-<member>-<tag>.qcow2`, `…-<tag>-seed.iso`). */
export function memberOfVolume(prefix: string, volume: string): string | undefined {
    if (!volume.startsWith(prefix)) return undefined;
    const m = /^(.+)-[0-9a-f]{8}(?:\.qcow2|-seed\.iso)$/.exec(volume.slice(prefix.length));
    return m?.[1];
}

export const kvmCollector: CollectorFactory<KvmProviderConfig> = (providerName, entry) => {
    const host = (name: string): KvmHost => {
        const h = entry.hosts.find((x) => x.name === name);
        if (!h) throw new Error(`host \`${name}\` is not in provider \`${providerName}\``);
        return h;
    };
    const collector: Collector = {
        provider: providerName,
        kind: "kvm",
        async list(scope) {
            const prefix = stackPrefix(scope.project, scope.stack);
            const found: ManagedThing[] = [];
            for (const h of entry.hosts) {
                await withLibvirt(connectionFor(entry, h), privateKeyText(entry), async (virsh) => {
                    const names = (await virsh(["list", "--all", "--name"])).split("\n").map((s) => s.trim()).filter(Boolean);
                    for (const name of names) {
                        // `metadata --uri` (not dumpxml: virsh 9.0 over libssh crashed on `dumpxml --inactive`
                        // of a running domain here). Domains without our element fail: not ours.
                        const xml = await virsh(["metadata", name, "--uri", METADATA_NS, "--config"]).catch((e) => {
                            if (isNotFound(e) || /metadata not found|not found/i.test((e as Error).message)) return "";
                            throw e;
                        });
                        const m = parseMetadata(xml, METADATA_NS);
                        if (m && m.project === scope.project && m.stack === scope.stack)
                            found.push({ kind: "kvm", provider: providerName, type: "domain", name, location: h.name, pool: m.pool, member: m.member });
                    }
                    for (const vol of await listVolumes(virsh, h.storagePool)) {
                        const member = memberOfVolume(prefix, vol);
                        if (member !== undefined)
                            found.push({ kind: "kvm", provider: providerName, type: "volume", name: `${h.storagePool}/${vol}`, location: h.name, member, pool: member.replace(/-\d+$/, "") });
                    }
                });
            }
            return found;
        },
        async remove(thing) {
            const h = host(thing.location);
            await withLibvirt(connectionFor(entry, h), privateKeyText(entry), async (virsh) => {
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
