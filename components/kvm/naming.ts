/**
 * Pure naming and placement rules of the KVM kind: what things are called on a libvirt host and which
 * host a member lands on. No I/O; tested directly.
 */
import * as crypto from "node:crypto";
import type { KvmProviderConfig } from "./config";
import type { MemberPlan, PoolConfig } from "../../src/model";
import type { KvmConnection } from "./libvirt";

export type KvmHost = KvmProviderConfig["hosts"][number];

/** XML namespace of the `<metadata>` element egress puts on every domain (found by `egress gc`). */
export const METADATA_NS = "https://egress.invalid/xmlns/kvm/1";

/** Base image volume, shared by every member of the entry on that host: `base-<entry>-<key>.<format>`. */
export function baseVolumeName(entry: string, key: string, format: string): string {
    return `base-${entry}-${key}.${format}`;
}

/**
 * Prefix of every per-member domain and volume of one installation: `egress-<installation id>-`. The id
 * (src/model/installation.ts) keeps two installations with one stack name apart on a shared host, keeps
 * names short and unambiguous (stack names may contain '-' and '.'), and lets GC match by prefix. A stack
 * made before ids adopted `hash8(project \0 stack)`, the prefix its names already had: nothing is renamed.
 */
export function installationPrefix(installationId: string): string {
    return `egress-${installationId}-`;
}

/** First 8 hex digits of the sha256 of `s`: the short tags in per-member names. */
export function hash8(s: string): string {
    return crypto.createHash("sha256").update(s).digest("hex").slice(0, 8);
}

/** The member a domain name of ours names (memberObjectNames' inverse: the installation prefix dropped). */
export function memberOfDomain(domain: string): string {
    return domain.replace(/^egress-[0-9a-f]{8}-/, "");
}

/** Names of one member's libvirt objects. `member` is `<pool>-<index>` (a DNS label). */
export function memberObjectNames(installationId: string, member: string): { domain: string } {
    return { domain: `${installationPrefix(installationId)}${member}` };
}

/**
 * A member's overlay volume: `<domain>-<hash8(base volume)>.qcow2`. The base's name is part of it, so a
 * new image key makes a new disk next to the old one.
 */
export function overlayVolumeName(domain: string, baseVolume: string): string {
    return `${domain}-${hash8(baseVolume)}.qcow2`;
}

/** A member's seed ISO volume: `<domain>-<tag>-seed.iso`, `tag` = 8 hex digits of the seed content's digest. */
export function seedVolumeName(domain: string, tag: string): string {
    return `${domain}-${tag}-seed.iso`;
}

/** Member name inside a per-member volume name (the inverse of overlayVolumeName / seedVolumeName), or undefined when not one of `prefix`. */
export function memberOfVolume(prefix: string, volume: string): string | undefined {
    if (!volume.startsWith(prefix)) return undefined;
    const m = /^(.+)-[0-9a-f]{8}(?:\.qcow2|-seed\.iso)$/.exec(volume.slice(prefix.length));
    return m?.[1];
}

/**
 * The template's volume name. `digest` is of what the program knows before anything exists (the base's
 * volume and image digest stand for its path and size): `<prefix>tpl-<pool>-<8 hex>.json`.
 */
export function templateVolumeName(prefix: string, pool: string, digest: string): string {
    return `${prefix}tpl-${pool}-${digest.slice(0, 8)}.json`;
}

/** The pool of a template volume of installation `prefix` (templateVolumeName's inverse), or undefined. */
export function poolOfTemplateVolume(prefix: string, volume: string): string | undefined {
    if (!volume.startsWith(prefix)) return undefined;
    return /^tpl-(.+)-[0-9a-f]{8}\.json$/.exec(volume.slice(prefix.length))?.[1];
}

/** Zone of a host: its `zone`, or its name when it has none (config crossCheck uses the same rule). */
export function hostZone(h: KvmHost): string {
    return h.zone ?? h.name;
}

/** Hosts a placement may use: those in `zone`, or all hosts when no zone is set. */
export function hostsForZone(entry: KvmProviderConfig, zone: string | undefined): KvmHost[] {
    const hosts = zone ? entry.hosts.filter((h) => hostZone(h) === zone) : entry.hosts;
    if (hosts.length === 0)
        throw new Error(
            `no KVM host of this provider is in zone \`${zone}\` (zones: ${entry.hosts.map(hostZone).join(", ")})`,
        );
    return hosts;
}

/** The host of one member: members of a zone spread over its hosts by index (stable under scaling). */
export function pickHost(entry: KvmProviderConfig, plan: MemberPlan): KvmHost {
    const hosts = hostsForZone(entry, plan.placement.zone);
    return hosts[plan.index % hosts.length];
}

/** The image key a placement uses: the named one, or the only one. */
export function imageKey(entry: KvmProviderConfig, image: string | undefined): string {
    if (image) {
        if (!entry.images[image])
            throw new Error(
                `image \`${image}\` is not in this provider's images (${Object.keys(entry.images).join(", ")})`,
            );
        return image;
    }
    const keys = Object.keys(entry.images);
    if (keys.length !== 1)
        throw new Error(`placement.image is required: this provider has ${keys.length} images (${keys.join(", ")})`);
    return keys[0];
}

/** Machine type of a placement: the named one, else `small` when defined, else the first. */
export function machineType(entry: KvmProviderConfig, name: string | undefined): { vcpu: number; memoryMiB: number } {
    const types = entry.machineTypes;
    const key = name ?? (types.small ? "small" : Object.keys(types)[0]);
    const t = types[key];
    if (!t)
        throw new Error(
            `machine type \`${key}\` is not in this provider's machineTypes (${Object.keys(types).join(", ")})`,
        );
    return t;
}

/**
 * Every (image key, host) a pool may need, whatever its replica count: the pool's placement and each
 * override's. Base images are created for these, so scaling never creates or deletes a base.
 */
export function poolBaseNeeds(entry: KvmProviderConfig, pool: PoolConfig): { key: string; host: KvmHost }[] {
    const seen = new Map<string, { key: string; host: KvmHost }>();
    const placements = [pool.placement, ...pool.members.map((m) => ({ ...pool.placement, ...(m.placement ?? {}) }))];
    for (const p of placements) {
        const key = imageKey(entry, p.image);
        for (const host of hostsForZone(entry, p.zone)) seen.set(`${key}/${host.name}`, { key, host });
    }
    return [...seen.values()];
}

/** Connection data for a host (no key material: that travels as a separate secret input). */
export function connectionFor(entry: KvmProviderConfig, host: KvmHost): KvmConnection {
    return {
        host: host.name,
        user: entry.ssh.user,
        address: host.address,
        port: host.port,
        ...(entry.ssh.privateKeyPath ? { privateKeyPath: entry.ssh.privateKeyPath } : {}),
        ...(entry.ssh.knownHosts ? { knownHosts: entry.ssh.knownHosts } : {}),
        ...(entry.ssh.knownHostsPath ? { knownHostsPath: entry.ssh.knownHostsPath } : {}),
    };
}

/** The private key as plain text, or undefined when a path is configured. `{secure}` means it was never decrypted. */
export function privateKeyText(entry: KvmProviderConfig): string | undefined {
    const k = entry.ssh.privateKey;
    if (k === undefined) return undefined;
    if (typeof k !== "string")
        throw new Error(
            "`ssh.privateKey` is still encrypted: read the config through Pulumi (pulumi.Config) so secrets are decrypted",
        );
    return k;
}
