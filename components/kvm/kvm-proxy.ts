import * as pulumi from "@pulumi/pulumi";
import type { KvmProviderConfig } from "./config";
import { encodeUserData, readCloudInit } from "../../src/model/cloud-init";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import { defaultUserData } from "./squid-config";
import type { PoolSharedArgs, ProviderSharedArgs } from "../kind";
import { memberPasswd } from "../shared/squid-passwd";
import { BaseImage } from "./base-image";
import type { BaseOwner } from "./base-owner";
import { KvmMember } from "./member-provider";
import { Template, templateDigest } from "./member-template";
import {
    baseVolumeName,
    connectionFor,
    hostZone,
    imageKey,
    installationPrefix,
    KvmHost,
    machineType,
    METADATA_NS,
    pickHost,
    poolBaseNeeds,
    privateKeyText,
    templateVolumeName,
} from "./naming";

/** Arguments of a KvmProxy: the common member arguments with a `kvm` provider entry. */
export type KvmProxyArgs = MemberArgs<KvmProviderConfig, KvmPoolShared>;

/**
 * What the members of an entry share: base images keyed `<image key>/<host name>`, and member templates
 * (member-template.ts), made on first use and keyed by their volume and host, under `group`.
 */
export interface KvmPoolShared {
    bases: Map<string, BaseImage>;
    templates: Map<string, Template>;
    group: pulumi.ComponentResource;
}

/** The private key as a Pulumi secret (undefined with `privateKeyPath`). */
function secretKey(entry: KvmProviderConfig): pulumi.Output<string> | undefined {
    const k = privateKeyText(entry);
    return k === undefined ? undefined : pulumi.secret(k);
}

/** One BaseImage for (entry, image key, host). */
function createBaseImage(
    name: string,
    providerName: string,
    entry: KvmProviderConfig,
    key: string,
    host: KvmHost,
    owner: BaseOwner,
    opts: pulumi.CustomResourceOptions,
): BaseImage {
    const img = entry.images[key];
    return new BaseImage(
        name,
        {
            conn: connectionFor(entry, host),
            privateKey: secretKey(entry),
            storagePool: host.storagePool,
            entry: providerName,
            key,
            url: img.url,
            sha256: img.sha256,
            format: img.format,
            volume: baseVolumeName(providerName, key, img.format),
            transfer: img.transfer,
            owner,
        },
        opts,
    );
}

/**
 * One BaseImage per (image key, host) that any pool of the entry may use (placements and member
 * overrides, independent of `replicas`, so scaling never touches a base), created once for the whole
 * program: the volume `base-<entry>-<key>.<format>` is one per host whatever the number of pools, and two
 * resources for it would race each other's `vol-create` in the same `up`.
 *
 * They live under a `egress:kvm:KvmBaseImages` component named after the entry, at the stack's top level
 * (one per entry, independent of pool order and names), children named `<entry>-base-<key>-<host>`.
 * Stacks from before had one BaseImage per pool, `<pool>-base-<key>-<host>` under that ProxyPool: the
 * first pool (config order) that needs a base is an alias, so its state carries over; other pools' old
 * copies are deleted by that `up`, which keeps the volume while overlays use it.
 */
export function createKvmProviderShared(
    providerName: string,
    args: ProviderSharedArgs<KvmProviderConfig>,
    opts: pulumi.ComponentResourceOptions,
): KvmPoolShared {
    const group = new KvmBaseImages(providerName, opts);
    const shared = new Map<string, BaseImage>();
    for (const pool of args.pools) {
        for (const { key, host } of poolBaseNeeds(args.entry, pool)) {
            const k = `${key}/${host.name}`;
            if (shared.has(k)) continue; // the first pool needing it names the alias
            const aliases = [
                {
                    name: `${pool.name}-base-${key}-${host.name}`,
                    parent: pulumi.createUrn(pool.name, "egress:index:ProxyPool"),
                },
            ];
            shared.set(
                k,
                createBaseImage(
                    `${providerName}-base-${key}-${host.name}`,
                    providerName,
                    args.entry,
                    key,
                    host,
                    {
                        project: args.context.project,
                        stack: args.context.stack,
                        installation: args.context.installation.id,
                    },
                    { parent: group, aliases },
                ),
            );
        }
    }
    return { bases: shared, templates: new Map(), group };
}

/** Groups one provider entry's base images and member templates (children only, no outputs). */
class KvmBaseImages extends pulumi.ComponentResource {
    constructor(name: string, opts: pulumi.ComponentResourceOptions) {
        super("egress:kvm:KvmBaseImages", name, {}, opts);
        this.registerOutputs({});
    }
}

/**
 * Per-pool view of the base images: the program-wide ones (`args.providerShared`), which src/program.ts
 * (the only place ProxyPools are built) always creates.
 */
export function createKvmPoolShared(
    name: string,
    args: PoolSharedArgs<KvmProviderConfig, KvmPoolShared>,
): KvmPoolShared {
    if (!args.providerShared)
        throw new Error(
            `kvm pool ${name} needs the provider entry's base images (createKvmProviderShared was not called for \`${args.providerName}\`)`,
        );
    return args.providerShared;
}

/** User-data as template text: base64 with `userDataEncoding` when binary (gzip). */
function seedUserData(bytes: Buffer): { userData: string; userDataEncoding?: "base64" } {
    const e = encodeUserData(bytes);
    return { userData: e.userData, ...(e.encoding ? { userDataEncoding: e.encoding } : {}) };
}

/**
 * The template of a member's pool on its host (member-template.ts), made by the first member that needs
 * it: its volume's name carries the digest of everything the program knows of it.
 */
function templateFor(
    args: KvmProxyArgs,
    host: KvmHost,
    base: BaseImage,
    userData: Buffer,
): { tpl: Template; volume: string } {
    const { entry, plan, context } = args;
    const key = imageKey(entry, plan.placement.image);
    const image = entry.images[key];
    const mt = machineType(entry, plan.placement.machineType);
    const prefix = installationPrefix(context.installation.id);
    const known = {
        prefix,
        storagePool: host.storagePool,
        domain: {
            domainType: host.domainType,
            vcpu: mt.vcpu,
            memoryMiB: mt.memoryMiB,
            firmware: image.firmware,
            ...(host.bridge ? { bridge: host.bridge } : { network: host.network }),
            metadataNs: METADATA_NS,
            // A legacy installation's domains keep the metadata they were made with (no replace on upgrade).
            metadata: {
                project: context.project,
                stack: context.stack,
                pool: args.pool,
                provider: args.providerName,
                ...(context.installation.legacy ? {} : { installation: context.installation.id }),
            },
        },
        seed: {
            ...seedUserData(userData),
            installGuestAgent: entry.installGuestAgent,
            ...(entry.vendorData !== undefined ? { vendorData: entry.vendorData } : {}),
        },
    };
    const baseVolume = baseVolumeName(args.providerName, key, image.format);
    const volume = templateVolumeName(
        prefix,
        args.pool,
        templateDigest({ ...known, baseVolume, sha256: image.sha256 }),
    );
    const shared = args.shared!;
    const found = shared.templates.get(`${volume}/${host.name}`);
    if (found) return { tpl: found, volume };
    const content = pulumi
        .all([base.path, base.capacityBytes])
        .apply(([path, capacityBytes]) =>
            JSON.stringify({ ...known, base: { volume: baseVolume, path, format: image.format, capacityBytes } }),
        );
    const tpl = new Template(
        `${args.providerName}-${volume.slice(prefix.length, -".json".length)}-${host.name}`,
        { at: { entry: args.providerName, host: host.name }, volume, content: pulumi.secret(content) },
        { parent: shared.group },
    );
    shared.templates.set(`${volume}/${host.name}`, tpl);
    return { tpl, volume };
}

/**
 * A proxy on a libvirt host (`type: kvm`): one member resource (member-provider.ts) that makes its
 * overlay on the shared base image, its NoCloud seed ISO and its domain from its pool's template on the
 * host. `member.host` is the guest's IP once known ("" until then, see addressTimeoutSeconds).
 */
export class KvmProxy extends ProxyMemberComponent {
    constructor(name: string, args: KvmProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        super("egress:kvm:KvmProxy", name, memberIdentity(args, hostZone(pickHost(args.entry, args.plan))), opts);
        const { entry, plan, context } = args;
        // Validate (and pick) before creating any child.
        const host = pickHost(entry, plan);
        const key = imageKey(entry, plan.placement.image);
        machineType(entry, plan.placement.machineType);
        const userData = plan.cloudInit
            ? readCloudInit(plan.cloudInit, context.projectRoot)
            : Buffer.from(defaultUserData(plan.port, memberPasswd(plan.auth, context, args.pool)));
        const base = args.shared?.bases.get(`${key}/${host.name}`);
        if (!base)
            throw new Error(
                `kvm member ${name} has no base image for image \`${key}\` on host ${host.name} (the provider entry's base images were not created for it)`,
            );
        const { tpl, volume } = templateFor(args, host, base, userData);
        // Delete before replace, as a resource option: a repair replaces a member with `up --replace`, which
        // never asks the provider's diff, and the domain and its volumes keep their names.
        const member = new KvmMember(
            name,
            {
                member: {
                    entry: args.providerName,
                    host: host.name,
                    name: plan.name,
                    tpl: volume,
                    wait: entry.addressTimeoutSeconds,
                },
            },
            { parent: this, dependsOn: [tpl], deleteBeforeReplace: true },
        );
        this.publish(args, member.ip, plan.port, hostZone(host));
    }
}
