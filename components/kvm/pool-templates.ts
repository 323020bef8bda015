/**
 * The member templates (member-template.ts) of a pool: one per distinct content and host. All that a pool
 * may need are created with the pool, whatever its replica count, as its base images are: a scale is a
 * targeted `up` of the members it adds (src/engine/member-urns.ts countTargets), which could not create a
 * template they depend on.
 */
import * as pulumi from "@pulumi/pulumi";
import { encodeUserData, readCloudInit } from "../../src/model/cloud-init";
import { possiblePlans, type MemberPlan, type StackContext } from "../../src/model";
import type { PoolSharedArgs } from "../kind";
import { memberPasswd } from "../shared/squid-passwd";
import type { KvmProviderConfig } from "./config";
import type { BaseImage } from "./base-image";
import { Template, templateDigest } from "./member-template";
import {
    baseVolumeName,
    hostsForZone,
    imageKey,
    installationPrefix,
    KvmHost,
    machineType,
    METADATA_NS,
    templateVolumeName,
} from "./naming";
import { defaultUserData } from "./squid-config";

/**
 * What the members of an entry share: base images keyed `<image key>/<host name>`, and member templates
 * (member-template.ts), made on first use and keyed by their volume and host, under `group`.
 */
export interface KvmPoolShared {
    bases: Map<string, BaseImage>;
    templates: Map<string, Template>;
    group: pulumi.ComponentResource;
}

/** Whose templates: a pool of a provider entry in a stack. */
export interface TemplateOwner {
    entry: KvmProviderConfig;
    providerName: string;
    pool: string;
    context: StackContext;
}

/** User-data as template text: base64 with `userDataEncoding` when binary (gzip). */
function seedUserData(bytes: Buffer): { userData: string; userDataEncoding?: "base64" } {
    const e = encodeUserData(bytes);
    return { userData: e.userData, ...(e.encoding ? { userDataEncoding: e.encoding } : {}) };
}

/** The member's user-data: its cloud-init file, or squid's default for its port (and the pool's credentials). */
function userDataOf(owner: TemplateOwner, plan: MemberPlan): Buffer {
    return plan.cloudInit
        ? readCloudInit(plan.cloudInit, owner.context.projectRoot)
        : Buffer.from(defaultUserData(plan.port, memberPasswd(plan.auth, owner.context, owner.pool)));
}

/** Everything of a template the program knows before anything exists (the base's path and size come later). */
function knownPart(owner: TemplateOwner, plan: MemberPlan, host: KvmHost) {
    const { entry, context } = owner;
    const mt = machineType(entry, plan.placement.machineType);
    const image = entry.images[imageKey(entry, plan.placement.image)];
    return {
        prefix: installationPrefix(context.installation.id),
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
                pool: owner.pool,
                provider: owner.providerName,
                ...(context.installation.legacy ? {} : { installation: context.installation.id }),
            },
        },
        seed: {
            ...seedUserData(userDataOf(owner, plan)),
            installGuestAgent: entry.installGuestAgent,
            ...(entry.vendorData !== undefined ? { vendorData: entry.vendorData } : {}),
        },
    };
}

/**
 * The template a member of `plan` uses on `host`, made on first use: its volume's name carries the digest
 * of everything the program knows of it, with the base's volume and image digest standing for its path.
 */
export function templateFor(
    shared: KvmPoolShared,
    owner: TemplateOwner,
    plan: MemberPlan,
    host: KvmHost,
): { tpl: Template; volume: string } {
    const { entry, providerName } = owner;
    const key = imageKey(entry, plan.placement.image);
    const image = entry.images[key];
    const base = shared.bases.get(`${key}/${host.name}`);
    if (!base)
        throw new Error(
            `kvm member ${plan.name} has no base image for image \`${key}\` on host ${host.name} (the provider entry's base images were not created for it)`,
        );
    const known = knownPart(owner, plan, host);
    const baseVolume = baseVolumeName(providerName, key, image.format);
    const digest = templateDigest({ ...known, baseVolume, sha256: image.sha256 });
    const volume = templateVolumeName(known.prefix, owner.pool, digest);
    const found = shared.templates.get(`${volume}/${host.name}`);
    if (found) return { tpl: found, volume };
    const content = pulumi
        .all([base.path, base.capacityBytes])
        .apply(([path, capacityBytes]) =>
            JSON.stringify({ ...known, base: { volume: baseVolume, path, format: image.format, capacityBytes } }),
        );
    const tpl = new Template(
        `${providerName}-${volume.slice(known.prefix.length, -".json".length)}-${host.name}`,
        { at: { entry: providerName, host: host.name }, volume, content: pulumi.secret(content) },
        { parent: shared.group },
    );
    shared.templates.set(`${volume}/${host.name}`, tpl);
    return { tpl, volume };
}

/** Every template the pool may need: each possible member shape (possiblePlans) on each host of its zone. */
export function createPoolTemplates(shared: KvmPoolShared, args: PoolSharedArgs<KvmProviderConfig>): void {
    const owner = { entry: args.entry, providerName: args.providerName, pool: args.pool.name, context: args.context };
    for (const plan of possiblePlans(args.pool))
        for (const host of hostsForZone(args.entry, plan.placement.zone)) templateFor(shared, owner, plan, host);
}
