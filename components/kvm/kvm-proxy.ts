import * as pulumi from "@pulumi/pulumi";
import type { KvmProviderConfig } from "./config";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import type { PoolSharedArgs, ProviderSharedArgs } from "../kind";
import { BaseImage } from "./base-image";
import type { BaseOwner } from "./base-owner";
import { KvmMember } from "./member-provider";
import { createPoolTemplates, KvmPoolShared, templateFor } from "./pool-templates";
import { baseVolumeName, connectionFor, hostZone, KvmHost, pickHost, poolBaseNeeds, privateKeyText } from "./naming";

/** Arguments of a KvmProxy: the common member arguments with a `kvm` provider entry. */
export type KvmProxyArgs = MemberArgs<KvmProviderConfig, KvmPoolShared>;

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
    createPoolTemplates(args.providerShared, args);
    return args.providerShared;
}

/**
 * A proxy on a libvirt host (`type: kvm`): one member resource (member-provider.ts) that makes its
 * overlay on the shared base image, its NoCloud seed ISO and its domain from its pool's template on the
 * host. `member.host` is the guest's IP once known ("" until then, see addressTimeoutSeconds).
 */
export class KvmProxy extends ProxyMemberComponent {
    constructor(name: string, args: KvmProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        super("egress:kvm:KvmProxy", name, memberIdentity(args, hostZone(pickHost(args.entry, args.plan))), opts);
        const { entry, plan } = args;
        // Validate (and pick) before creating any child.
        const host = pickHost(entry, plan);
        const { tpl, volume } = templateFor(args.shared!, args, plan, host);
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
