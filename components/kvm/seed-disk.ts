import * as pulumi from "@pulumi/pulumi";
import { connectionDiff, KvmConnection, withLibvirt } from "./libvirt";
import { buildSeedIso, seedDigest } from "./seed-iso";
import { clearLeftoverVolume, deleteVolume, sameVolumeName, uploadInto, uploadTargetXml, volumeId, withNewVolume } from "./volumes";

/** Inputs of a SeedDisk: a member's NoCloud ISO, uploaded as a volume. */
export interface SeedDiskInputs {
    conn: KvmConnection;
    privateKey?: string;
    storagePool: string;
    /** `<domain>-<digest8>-seed.iso`: the digest is part of the name, so new content = a new volume. */
    volume: string;
    /** Cloud-init user-data, byte for byte (a secret input: it often carries credentials). */
    userData: string;
    instanceId: string;
    hostname: string;
    installGuestAgent: boolean;
    vendorData?: string;
}

export interface SeedDiskOutputs extends SeedDiskInputs {
    path: string;
    /** sha256 over the seed files. */
    digest: string;
}

/** Any content change rebuilds the ISO; its name carries the content digest, so normally as a new volume created before the old one is deleted. */
const REPLACE_ON = ["volume", "storagePool", "userData", "instanceId", "hostname", "installGuestAgent", "vendorData"] as const;

export const seedDiskProvider: pulumi.dynamic.ResourceProvider<SeedDiskInputs, SeedDiskOutputs> = {
    async create(inputs) {
        const fs = require("node:fs") as typeof import("node:fs");
        const os = require("node:os") as typeof import("node:os");
        const path = require("node:path") as typeof import("node:path");
        const content = { userData: inputs.userData, instanceId: inputs.instanceId, hostname: inputs.hostname, installGuestAgent: inputs.installGuestAgent, vendorData: inputs.vendorData };
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-seed-"));
        try {
            const iso = await buildSeedIso(content, dir); // fails before touching the host when no ISO tool exists
            return await withLibvirt(inputs.conn, inputs.privateKey, async (virsh) => {
                // A volume of this name is deleted only when no domain uses it (see clearLeftoverVolume).
                await clearLeftoverVolume(virsh, inputs.storagePool, inputs.volume, `seed ${inputs.volume}`);
                return await withNewVolume(virsh, inputs.storagePool, inputs.volume, uploadTargetXml(inputs.volume, iso), async () => {
                    const p = await uploadInto(virsh, inputs.storagePool, inputs.volume, iso);
                    return { id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume), outs: { ...inputs, path: p, digest: seedDigest(content) } };
                });
            });
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    },

    async diff(_id, olds, news) {
        const conn = connectionDiff(olds, news);
        const replaces: string[] = [...REPLACE_ON.filter((k) => (olds[k] ?? null) !== (news[k] ?? null)), ...conn.replaces];
        const changes = replaces.length > 0 || conn.changes;
        // A new name (content digest) is created before the old goes; the same name must go first.
        return { changes, replaces, deleteBeforeReplace: replaces.length > 0 && sameVolumeName(olds, news) };
    },

    async update(_id, olds, news) {
        return { outs: { ...olds, ...news, path: olds.path, digest: olds.digest } };
    },

    async delete(_id, props) {
        await withLibvirt(props.conn, props.privateKey, (virsh) => deleteVolume(virsh, props.storagePool, props.volume));
    },
};

/** A member's cloud-init seed CD. */
export class SeedDisk extends pulumi.dynamic.Resource {
    declare public readonly path: pulumi.Output<string>;
    declare public readonly digest: pulumi.Output<string>;
    declare public readonly volume: pulumi.Output<string>;

    constructor(name: string, args: { [K in keyof SeedDiskInputs]: pulumi.Input<SeedDiskInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(seedDiskProvider, name, { ...args, path: undefined, digest: undefined }, { ...opts, additionalSecretOutputs: ["privateKey", "userData", "vendorData"] }, "egress", "kvm:SeedDisk");
    }
}
