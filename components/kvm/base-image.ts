import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { describeConnection, KvmConnection, replaceDiff, Virsh, volumePath, withLibvirt, withTempDir } from "./libvirt";
import { BaseOwner, isOurUpload, uploadMarkerName, uploadMarkers } from "./base-owner";
import { volumeXml } from "./xml";
import { downloadTo } from "./fetch";
import { TransferLimits, transferLimits } from "./transfer";
import type { LibvirtError } from "./libvirt-errors";
import { withRetry, type RetrySchedule } from "../shared/retry";
import {
    type TransferDeadline,
    createVolume,
    deleteVolume,
    remoteDigest,
    uploadInto,
    uploadTargetXml,
    volumeCapacity,
    volumeId,
    volumesBackedBy,
    withNewVolume,
} from "./volumes";

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
    /** The stack creating it: its upload marker says so (./base-owner.ts). Unset in state from before markers. */
    owner?: BaseOwner;
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
function digestChangedMessage(
    i: { entry: string; key: string; volume: string },
    oldSha: string,
    newSha: string,
): string {
    return (
        `image \`${i.key}\` of provider \`${i.entry}\`: sha256 changed from ${oldSha} to ${newSha}. ` +
        `A base image is never replaced under running overlays: add a new key to \`images\` (e.g. \`${i.key}-2\`) ` +
        `with the new url/sha256 and point placement.image at it; volume ${i.volume} is left as it is.`
    );
}

/**
 * Removes what an unfinished upload of OURS left of a base (crash undo, and a create meeting it): the base
 * volume only when it is unverified (its digest is not `sha256`) and no overlay is backed by it; then our
 * marker. Another owner's upload, or a base without our marker, is never touched: returns [] then.
 * Returns a line per thing done.
 */
export async function clearOurUnfinishedUpload(
    virsh: Virsh,
    i: Pick<BaseImageInputs, "storagePool" | "volume" | "sha256" | "owner" | "transfer">,
    host: string,
): Promise<string[]> {
    if (!(await isOurUpload(virsh, i.storagePool, i.volume, i.owner))) return [];
    const done: string[] = [];
    const p = await volumePath(virsh, i.storagePool, i.volume);
    if (p) {
        const got = await remoteDigest(virsh, i.storagePool, i.volume, { limits: i.transfer });
        const users = got.sha256 === i.sha256 ? [] : await volumesBackedBy(virsh, i.storagePool, p);
        if (got.sha256 === i.sha256)
            done.push(`kept base volume ${i.volume} on ${host}: its upload had finished and verifies`);
        else if (users.length > 0)
            done.push(
                `kept base volume ${i.volume} on ${host}: unverified, but ${users.length} overlay(s) use it (${users.slice(0, 3).join(", ")})`,
            );
        else {
            await deleteVolume(virsh, i.storagePool, i.volume);
            done.push(
                `removed unverified base volume ${i.volume} (an interrupted upload of ours, ${got.bytes} bytes) from pool ${i.storagePool} on ${host}`,
            );
        }
    }
    await deleteVolume(virsh, i.storagePool, uploadMarkerName(i.volume, i.owner!));
    done.push(`removed upload marker ${uploadMarkerName(i.volume, i.owner!)} on ${host}`);
    return done;
}

/**
 * Two more whole uploads after a lost connection, 5 s and then 10 s later; each try is bounded by its own
 * transfer deadline. A busy host has dropped two tries 35 s apart on its keepalive (a CI run on a loaded
 * machine); a third try, later, gives it time to catch up. Past that, the create fails `[transient]` and
 * the next `up` (the service's reconcile loop runs one after its back-off) tries again.
 */
const UPLOAD_RETRY: RetrySchedule = {
    tries: 3,
    firstDelayMs: 5000,
    maxDelayMs: 15000,
    maxTotalMs: Number.MAX_SAFE_INTEGER,
};

/** Type token of the BaseImage dynamic resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const BASE_IMAGE_TYPE = dynamicType("egress", "kvm:BaseImage");

export const baseImageProvider: pulumi.dynamic.ResourceProvider<BaseImageInputs, BaseImageOutputs> = {
    async create(inputs) {
        return withLibvirt(inputs.conn, inputs.privateKey, async (virsh) => {
            const where = `image \`${inputs.key}\` of provider \`${inputs.entry}\` on ${describeConnection(inputs.conn)}`;
            const deadline = {
                limits: inputs.transfer,
                where: `egress:providers.${inputs.entry}.images.${inputs.key}.transfer`,
                what: where,
            };
            await virsh(["pool-refresh", inputs.storagePool]);
            // Our own upload that a killed run left (recovery missed it): ours to clear before starting over.
            await clearOurUnfinishedUpload(virsh, inputs, inputs.conn.host);
            const existing = await volumePath(virsh, inputs.storagePool, inputs.volume);
            // Shared with another pool/stack, or left by an interrupted run: adopt only verified bytes.
            if (existing) return await adoptVerified(virsh, inputs, existing, where, deadline);
            return await downloadAndUpload(virsh, inputs, where, deadline);
        });
    },

    async diff(_id, olds, news) {
        const { replaces, changes } = replaceDiff(olds, news, REPLACE_ON);
        // Never delete the old base before its overlays are gone: create the new one first.
        const transfer = JSON.stringify(olds.transfer ?? null) !== JSON.stringify(news.transfer ?? null);
        return {
            changes: changes || transfer || olds.sha256 !== news.sha256 || olds.url !== news.url,
            replaces,
            deleteBeforeReplace: false,
        };
    },

    async update(_id, olds, news) {
        if (olds.sha256 !== news.sha256) throw new Error(digestChangedMessage(news, olds.sha256, news.sha256));
        // A new url with the same digest, new deadlines or new connection details: nothing to do on the host.
        return {
            outs: { ...olds, ...news, path: olds.path, capacityBytes: olds.capacityBytes, adopted: olds.adopted },
        };
    },

    async delete(_id, props) {
        await withLibvirt(props.conn, props.privateKey, async (virsh) => {
            const p = await volumePath(virsh, props.storagePool, props.volume);
            if (!p) return; // already gone
            // A base is a cache shared by pools and stacks: keep it while any overlay still uses it.
            const users = await volumesBackedBy(virsh, props.storagePool, p);
            if (users.length === 0) await deleteVolume(virsh, props.storagePool, props.volume);
            if (props.owner) await deleteVolume(virsh, props.storagePool, uploadMarkerName(props.volume, props.owner));
        });
    },
};

type CreateResult = pulumi.dynamic.CreateResult<BaseImageOutputs>;

/**
 * A volume of the base's name is already on the host: adopted when its bytes have the configured digest.
 * Otherwise it is never deleted here: with overlays on it, the config changed a key's digest (add a new
 * key); without, it is another stack's upload, in progress or interrupted (its marker says whose).
 */
async function adoptVerified(
    virsh: Virsh,
    inputs: BaseImageInputs,
    existing: string,
    where: string,
    deadline: TransferDeadline,
): Promise<CreateResult> {
    const got = await remoteDigest(virsh, inputs.storagePool, inputs.volume, deadline);
    if (got.sha256 === inputs.sha256) {
        const capacityBytes = await volumeCapacity(virsh, inputs.storagePool, inputs.volume);
        return {
            id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume),
            outs: { ...inputs, path: existing, capacityBytes, adopted: true },
        };
    }
    const users = await volumesBackedBy(virsh, inputs.storagePool, existing);
    if (users.length > 0)
        throw new Error(
            `${where}: volume ${inputs.volume} exists with sha256 ${got.sha256}, not ${inputs.sha256}, and ${users.length} overlay(s) use it (${users.slice(0, 3).join(", ")}); add a new image key instead of changing this one`,
        );
    // Nobody's overlay uses it, but it is not our upload: another stack's in progress, or
    // one it left when killed (its marker says whose). Never deleted here.
    const markers = await uploadMarkers(virsh, inputs.storagePool, inputs.volume);
    throw new Error(
        `${where}: volume ${inputs.volume} exists with sha256 ${got.sha256}, not ${inputs.sha256}, and no overlay uses it: ` +
            (markers.length
                ? `another stack's upload (marker ${markers.join(", ")}), in progress or interrupted; that stack's next up removes it if it was interrupted. `
                : `not an upload of this stack (no upload marker of ours). `) +
            `It is left alone; if nothing is uploading it, remove it (virsh vol-delete --pool ${inputs.storagePool} ${inputs.volume}) and run up again`,
    );
}

/** No volume yet: download and verify the image locally, then upload it under our marker and verify it again. */
async function downloadAndUpload(
    virsh: Virsh,
    inputs: BaseImageInputs,
    where: string,
    deadline: TransferDeadline & { where: string },
): Promise<CreateResult> {
    const path = require("node:path") as typeof import("node:path");
    return await withTempDir("egress-base-", async (dir) => {
        // 1. stream + hash locally; nothing reaches the host unless the digest matches.
        const got = await downloadTo(inputs.url, path.join(dir, "image"), {
            limits: transferLimits(inputs.transfer),
            where: deadline.where,
        });
        if (got.sha256 !== inputs.sha256)
            throw new Error(
                `${where}: ${inputs.url} has sha256 ${got.sha256} (${got.bytes} bytes), config says ${inputs.sha256}; fix \`images.${inputs.key}.sha256\` or the url`,
            );
        // 2. mark the upload as ours, so a killed run's half-written volume can be told from
        // another stack's and removed by our crash undo (./recover.ts) or next create.
        const marker = inputs.owner ? uploadMarkerName(inputs.volume, inputs.owner) : undefined;
        if (marker) await createVolume(virsh, inputs.storagePool, volumeXml(marker, 0, "raw"));
        try {
            // A connection lost mid-upload (libvirt's keepalive on a slow or busy link) is worth one
            // more whole try: withNewVolume has deleted the partial volume by then.
            // A retry first removes what the lost try left: its own cleanup ran over the same lost
            // connection. Only ours can be there (the marker says so; vol-create refused any other).
            const again = async (n: number) => {
                if (n > 1) await deleteVolume(virsh, inputs.storagePool, inputs.volume).catch(() => undefined);
                return uploadVerified(virsh, inputs, got, where, deadline);
            };
            return await withRetry(again, {
                schedule: UPLOAD_RETRY,
                // A dropped connection only: a missed transfer deadline ends this create (its
                // message says the next up tries again), so the deadline bounds the whole create.
                retryable: (e) => {
                    const le = e as Partial<LibvirtError>;
                    return le?.errorClass === "transient" && le.stage !== undefined && le.stage !== "timeout";
                },
            });
        } finally {
            // Verified or removed: either way the upload is over. (If this fails, the next create clears it.)
            if (marker) await deleteVolume(virsh, inputs.storagePool, marker).catch(() => undefined);
        }
    });
}

/**
 * 3. create + upload, 4. verify what the host stored before anything may use it. libvirt cannot rename
 * volumes, so a failed upload or verification deletes the volume again; a volume someone else created
 * meanwhile makes vol-create fail and is left alone.
 */
function uploadVerified(
    virsh: Virsh,
    inputs: BaseImageInputs,
    got: { file: string; bytes: number },
    where: string,
    deadline: TransferDeadline,
): Promise<CreateResult> {
    return withNewVolume(
        virsh,
        inputs.storagePool,
        inputs.volume,
        uploadTargetXml(inputs.volume, got.file),
        async (p) => {
            await uploadInto(virsh, inputs.storagePool, inputs.volume, got.file, deadline);
            const stored = await remoteDigest(virsh, inputs.storagePool, inputs.volume, {
                ...deadline,
                bytes: got.bytes,
            });
            if (stored.sha256 !== inputs.sha256)
                throw new Error(
                    `${where}: the uploaded volume ${inputs.volume} has sha256 ${stored.sha256}, expected ${inputs.sha256} (upload corrupted?)`,
                );
            const capacityBytes = await volumeCapacity(virsh, inputs.storagePool, inputs.volume);
            return {
                id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume),
                outs: { ...inputs, path: p, capacityBytes, adopted: false },
            };
        },
    );
}

/** The base image volume on one host (created once, never replaced under overlays). */
export class BaseImage extends LoadedDynamicResource {
    declare public readonly path: pulumi.Output<string>;
    declare public readonly capacityBytes: pulumi.Output<number>;
    declare public readonly volume: pulumi.Output<string>;
    declare public readonly format: pulumi.Output<"qcow2" | "raw">;

    constructor(
        name: string,
        args: { [K in keyof BaseImageInputs]: pulumi.Input<BaseImageInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            BASE_IMAGE_TYPE,
            name,
            { ...args, path: undefined, capacityBytes: undefined, adopted: undefined },
            { ...opts, additionalSecretOutputs: ["privateKey"] },
        );
    }
}
