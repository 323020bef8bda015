import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { KvmConnection, withLibvirt, withTempDir } from "./libvirt";
import { buildSeedIso } from "./seed-iso";
import { decodeUserData } from "../../src/model/cloud-init";
import { memberOfVolumeName } from "./unreachable";
import {
    clearLeftoverVolume,
    memberVolumeLifecycle,
    uploadInto,
    uploadTargetXml,
    volumeId,
    withNewVolume,
} from "./volumes";

/** Inputs of a SeedDisk: a member's NoCloud ISO, uploaded as a volume. */
export interface SeedDiskInputs {
    conn: KvmConnection;
    privateKey?: string;
    storagePool: string;
    /** `<domain>-<digest8>-seed.iso`: the digest is part of the name, so new content = a new volume. */
    volume: string;
    /**
     * Cloud-init user-data (a secret input: it often carries credentials): text as it is, or base64 when
     * `userDataEncoding` says so (binary user-data such as gzip; inputs and state hold strings only).
     */
    userData: string;
    userDataEncoding?: "base64";
    instanceId: string;
    hostname: string;
    installGuestAgent: boolean;
    vendorData?: string;
}

export interface SeedDiskOutputs extends SeedDiskInputs {
    path: string;
}

/** Any content change rebuilds the ISO; its name carries the content digest, so normally as a new volume created before the old one is deleted. */
const REPLACE_ON = [
    "volume",
    "storagePool",
    "userData",
    "userDataEncoding",
    "instanceId",
    "hostname",
    "installGuestAgent",
    "vendorData",
] as const;

/** Type token of the SeedDisk dynamic resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const SEED_DISK_TYPE = dynamicType("egress", "kvm:SeedDisk");

export const seedDiskProvider: pulumi.dynamic.ResourceProvider<SeedDiskInputs, SeedDiskOutputs> = {
    async create(inputs) {
        const content = {
            userData: decodeUserData({ userData: inputs.userData, encoding: inputs.userDataEncoding }),
            instanceId: inputs.instanceId,
            hostname: inputs.hostname,
            installGuestAgent: inputs.installGuestAgent,
            vendorData: inputs.vendorData,
        };
        return withTempDir("egress-seed-", async (dir) => {
            const iso = await buildSeedIso(content, dir); // fails before touching the host when no ISO tool exists
            return await withLibvirt(
                inputs.conn,
                inputs.privateKey,
                async (virsh) => {
                    // A volume of this name is deleted only when no domain uses it (see clearLeftoverVolume).
                    await clearLeftoverVolume(virsh, inputs.storagePool, inputs.volume, `seed ${inputs.volume}`);
                    return await withNewVolume(
                        virsh,
                        inputs.storagePool,
                        inputs.volume,
                        uploadTargetXml(inputs.volume, iso),
                        async (p) => {
                            await uploadInto(virsh, inputs.storagePool, inputs.volume, iso);
                            return {
                                id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume),
                                outs: { ...inputs, path: p },
                            };
                        },
                    );
                },
                { member: memberOfVolumeName(inputs.volume) },
            );
        });
    },

    ...memberVolumeLifecycle<SeedDiskInputs, (typeof REPLACE_ON)[number]>(REPLACE_ON),
};

/** A member's cloud-init seed CD. */
export class SeedDisk extends LoadedDynamicResource {
    declare public readonly path: pulumi.Output<string>;
    declare public readonly volume: pulumi.Output<string>;

    constructor(
        name: string,
        args: { [K in keyof SeedDiskInputs]: pulumi.Input<SeedDiskInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            SEED_DISK_TYPE,
            name,
            { ...args, path: undefined },
            { ...opts, additionalSecretOutputs: ["privateKey", "userData", "vendorData"] },
        );
    }
}
