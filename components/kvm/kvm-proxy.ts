import * as pulumi from "@pulumi/pulumi";
import type { KvmProviderConfig } from "./config";
import { encodeUserData, readCloudInit } from "../../src/model/cloud-init";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import { defaultUserData } from "./squid-config";
import type { PoolSharedArgs, ProviderSharedArgs } from "../kind";
import { memberPasswd } from "../shared/squid-passwd";
import { BaseImage } from "./base-image";
import type { BaseOwner } from "./base-owner";
import { Domain } from "./domain";
import { Overlay } from "./overlay";
import { SeedDisk } from "./seed-disk";
import { seedDigest } from "./seed-iso";
import {
    baseVolumeName,
    connectionFor,
    hostZone,
    imageKey,
    KvmHost,
    machineType,
    memberObjectNames,
    METADATA_NS,
    overlayVolumeName,
    pickHost,
    poolBaseNeeds,
    privateKeyText,
    seedVolumeName,
} from "./naming";

/** Arguments of a KvmProxy: the common member arguments with a `kvm` provider entry. */
export type KvmProxyArgs = MemberArgs<KvmProviderConfig, KvmPoolShared>;

/** Base images a pool shares across members, keyed `<image key>/<host name>`. */
export type KvmPoolShared = Map<string, BaseImage>;

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
    const shared: KvmPoolShared = new Map();
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
    return shared;
}

/** Groups one provider entry's base images (children only, no outputs). */
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

/** User-data as SeedDisk inputs: a secret string, base64 with `userDataEncoding` when binary (gzip). */
function seedUserData(bytes: Buffer): { userData: pulumi.Output<string>; userDataEncoding?: "base64" } {
    const e = encodeUserData(bytes);
    return { userData: pulumi.secret(e.userData), ...(e.encoding ? { userDataEncoding: e.encoding } : {}) };
}

/**
 * A proxy on a libvirt host (`type: kvm`): base image (shared), qcow2 overlay, NoCloud seed ISO and a
 * domain. `member.host` is the guest's IP once known ("" until then, see addressTimeoutSeconds).
 */
export class KvmProxy extends ProxyMemberComponent {
    constructor(name: string, args: KvmProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        super("egress:kvm:KvmProxy", name, memberIdentity(args, hostZone(pickHost(args.entry, args.plan))), opts);
        const { entry, plan, context } = args;
        // Validate (and pick) before creating any child.
        const host = pickHost(entry, plan);
        const key = imageKey(entry, plan.placement.image);
        const mt = machineType(entry, plan.placement.machineType);
        const image = entry.images[key];
        const userData = plan.cloudInit
            ? readCloudInit(plan.cloudInit, context.projectRoot)
            : Buffer.from(defaultUserData(plan.port, memberPasswd(plan.auth, context, args.pool)));
        const names = memberObjectNames(context.installation.id, plan.name);
        const conn = connectionFor(entry, host);
        const privateKey = secretKey(entry);

        const base = args.shared?.get(`${key}/${host.name}`);
        if (!base)
            throw new Error(
                `kvm member ${name} has no base image for image \`${key}\` on host ${host.name} (the provider entry's base images were not created for it)`,
            );
        // Delete before replace, as a resource option: a repair replaces a member with `up --replace`, which
        // never asks the provider's diff (so its deleteBeforeReplace is not consulted), and the domain and
        // its volumes keep their names — a replacement made first would collide with the old one.
        const replaceOpts = { parent: this, deleteBeforeReplace: true };
        const overlay = new Overlay(
            `${name}-disk`,
            {
                conn,
                privateKey,
                storagePool: host.storagePool,
                // The base's name is part of the overlay's: a new image key makes a new disk next to the old one.
                volume: overlayVolumeName(names.domain, baseVolumeName(args.providerName, key, image.format)),
                basePath: base.path,
                baseFormat: image.format,
                capacityBytes: base.capacityBytes,
            },
            replaceOpts,
        );

        const content = {
            userData,
            hostname: plan.name,
            installGuestAgent: entry.installGuestAgent,
            vendorData: entry.vendorData,
        };
        const tag = seedDigest({ ...content, instanceId: "" }).slice(0, 8);
        const seed = new SeedDisk(
            `${name}-seed`,
            {
                conn,
                privateKey,
                storagePool: host.storagePool,
                volume: seedVolumeName(names.domain, tag),
                ...seedUserData(userData),
                instanceId: `${names.domain}-${tag}`,
                hostname: plan.name,
                installGuestAgent: entry.installGuestAgent,
                ...(entry.vendorData !== undefined ? { vendorData: pulumi.secret(entry.vendorData) } : {}),
            },
            replaceOpts,
        );

        const domain = new Domain(
            `${name}-vm`,
            {
                conn,
                privateKey,
                name: names.domain,
                domainType: host.domainType,
                vcpu: mt.vcpu,
                memoryMiB: mt.memoryMiB,
                firmware: image.firmware,
                overlayPath: overlay.path,
                seedPath: seed.path,
                ...(host.bridge ? { bridge: host.bridge } : { network: host.network }),
                // A legacy installation's domains keep the metadata they were made with (no replace on upgrade).
                metadata: {
                    project: context.project,
                    stack: context.stack,
                    pool: args.pool,
                    member: plan.name,
                    provider: args.providerName,
                    ...(context.installation.legacy ? {} : { installation: context.installation.id }),
                },
                metadataNs: METADATA_NS,
                addressTimeoutSeconds: entry.addressTimeoutSeconds,
            },
            replaceOpts,
        );

        this.publish(args, domain.ipAddress, plan.port, hostZone(host));
    }
}
