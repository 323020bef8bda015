import * as pulumi from "@pulumi/pulumi";
import { describeConnection, KvmConnection, replaceDiff, volumePath, withLibvirt, withTempDir } from "./libvirt";
import { downloadTo } from "./fetch";
import { TransferLimits, transferLimits } from "./transfer";
import { deleteVolume, remoteDigest, uploadInto, uploadTargetXml, volumeCapacity, volumeId, volumesBackedBy, withNewVolume } from "./volumes";

/** Inputs of a BaseImage: one cached image volume per (provider entry, image key, host). */
export interface BaseImageInputs {
    conn: KvmConnection;
    /** Decrypted private key (a secret input; kept only as a secret output). Unset with `conn.privateKeyPath`. */
    privateKey?: string;
    storagePool: string;
    /** Provider entry and image key, for messages. */
    entry: string;
    key: string;
    url: string;
    sha256: string;
    format: "qcow2" | "raw";
    /** `base-<entry>-<key>.<format>`. */
    volume: string;
    /** The image's `transfer` deadlines (config `images.<key>.transfer`); unset fields take the defaults. */
    transfer?: Partial<TransferLimits>;
}

export interface BaseImageOutputs extends BaseImageInputs {
    /** Path libvirt gives the volume (overlays are backed by it). */
    path: string;
    /** Virtual size in bytes (overlays get the same capacity). */
    capacityBytes: number;
    /** True when this resource found the volume already there (shared with another pool or stack). */
    adopted: boolean;
}

/** Changing any of these points at another volume. sha256/url are deliberately absent: see `update`. */
const REPLACE_ON = ["volume", "storagePool"] as const;

/** The error for a digest change of an existing key. */
function digestChangedMessage(i: { entry: string; key: string; volume: string }, oldSha: string, newSha: string): string {
    return (
        `image \`${i.key}\` of provider \`${i.entry}\`: sha256 changed from ${oldSha} to ${newSha}. ` +
        `A base image is never replaced under running overlays: add a new key to \`images\` (e.g. \`${i.key}-2\`) ` +
        `with the new url/sha256 and point placement.image at it; volume ${i.volume} is left as it is.`
    );
}

export const baseImageProvider: pulumi.dynamic.ResourceProvider<BaseImageInputs, BaseImageOutputs> = {
    async create(inputs) {
        const path = require("node:path") as typeof import("node:path");
        return withLibvirt(inputs.conn, inputs.privateKey, async (virsh) => {
            const where = `image \`${inputs.key}\` of provider \`${inputs.entry}\` on ${describeConnection(inputs.conn)}`;
            const deadline = { limits: inputs.transfer, where: `egress:providers.${inputs.entry}.images.${inputs.key}.transfer`, what: where };
            await virsh(["pool-refresh", inputs.storagePool]);
            const existing = await volumePath(virsh, inputs.storagePool, inputs.volume);
            if (existing) {
                // Shared with another pool/stack, or left by an interrupted run: adopt only verified bytes.
                const got = await remoteDigest(virsh, inputs.storagePool, inputs.volume, deadline);
                if (got.sha256 !== inputs.sha256) {
                    const users = await volumesBackedBy(virsh, inputs.storagePool, existing);
                    if (users.length > 0)
                        throw new Error(`${where}: volume ${inputs.volume} exists with sha256 ${got.sha256}, not ${inputs.sha256}, and ${users.length} overlay(s) use it (${users.slice(0, 3).join(", ")}); add a new image key instead of changing this one`);
                    // Nobody's overlay uses it, but it may be another stack's upload in progress: a volume
                    // this resource did not create is never deleted. The operator decides.
                    throw new Error(
                        `${where}: volume ${inputs.volume} exists with sha256 ${got.sha256}, not ${inputs.sha256}, and no overlay uses it: another stack uploading it right now, or a partial upload left by an interrupted run. ` +
                            `It is left alone; if nothing is uploading it, remove it (virsh vol-delete --pool ${inputs.storagePool} ${inputs.volume}) and run up again`,
                    );
                } else {
                    const capacityBytes = await volumeCapacity(virsh, inputs.storagePool, inputs.volume);
                    return { id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume), outs: { ...inputs, path: existing, capacityBytes, adopted: true } };
                }
            }
            return await withTempDir("egress-base-", async (dir) => {
                // 1. stream + hash locally; nothing reaches the host unless the digest matches.
                const got = await downloadTo(inputs.url, path.join(dir, "image"), { limits: transferLimits(inputs.transfer), where: deadline.where });
                if (got.sha256 !== inputs.sha256)
                    throw new Error(`${where}: ${inputs.url} has sha256 ${got.sha256} (${got.bytes} bytes), config says ${inputs.sha256}; fix \`images.${inputs.key}.sha256\` or the url`);
                // 2. create + upload, 3. verify what the host stored before anything may use it. libvirt
                // cannot rename volumes, so a failed upload or verification deletes the volume again; a
                // volume someone else created meanwhile makes vol-create fail and is left alone.
                return await withNewVolume(virsh, inputs.storagePool, inputs.volume, uploadTargetXml(inputs.volume, got.file), async (p) => {
                    await uploadInto(virsh, inputs.storagePool, inputs.volume, got.file, deadline);
                    const stored = await remoteDigest(virsh, inputs.storagePool, inputs.volume, { ...deadline, bytes: got.bytes });
                    if (stored.sha256 !== inputs.sha256) throw new Error(`${where}: the uploaded volume ${inputs.volume} has sha256 ${stored.sha256}, expected ${inputs.sha256} (upload corrupted?)`);
                    const capacityBytes = await volumeCapacity(virsh, inputs.storagePool, inputs.volume);
                    return { id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume), outs: { ...inputs, path: p, capacityBytes, adopted: false } };
                });
            });
        });
    },

    async diff(_id, olds, news) {
        const { replaces, changes } = replaceDiff(olds, news, REPLACE_ON);
        // Never delete the old base before its overlays are gone: create the new one first.
        const transfer = JSON.stringify(olds.transfer ?? null) !== JSON.stringify(news.transfer ?? null);
        return { changes: changes || transfer || olds.sha256 !== news.sha256 || olds.url !== news.url, replaces, deleteBeforeReplace: false };
    },

    async update(_id, olds, news) {
        if (olds.sha256 !== news.sha256) throw new Error(digestChangedMessage(news, olds.sha256, news.sha256));
        // A new url with the same digest, new deadlines or new connection details: nothing to do on the host.
        return { outs: { ...olds, ...news, path: olds.path, capacityBytes: olds.capacityBytes, adopted: olds.adopted } };
    },

    async delete(_id, props) {
        await withLibvirt(props.conn, props.privateKey, async (virsh) => {
            const p = await volumePath(virsh, props.storagePool, props.volume);
            if (!p) return; // already gone
            // A base is a cache shared by pools and stacks: keep it while any overlay still uses it.
            const users = await volumesBackedBy(virsh, props.storagePool, p);
            if (users.length === 0) await deleteVolume(virsh, props.storagePool, props.volume);
        });
    },
};

/** The base image volume on one host (created once, never replaced under overlays). */
export class BaseImage extends pulumi.dynamic.Resource {
    declare public readonly path: pulumi.Output<string>;
    declare public readonly capacityBytes: pulumi.Output<number>;
    declare public readonly volume: pulumi.Output<string>;
    declare public readonly format: pulumi.Output<"qcow2" | "raw">;

    constructor(name: string, args: { [K in keyof BaseImageInputs]: pulumi.Input<BaseImageInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(baseImageProvider, name, { ...args, path: undefined, capacityBytes: undefined, adopted: undefined }, { ...opts, additionalSecretOutputs: ["privateKey"] }, "egress", "kvm:BaseImage");
    }
}
