import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { KvmConnection, withLibvirt } from "./libvirt";
import { memberOfVolumeName } from "./unreachable";
import { clearLeftoverVolume, memberVolumeLifecycle, volumeId, withNewVolume } from "./volumes";
import { overlayXml } from "./xml";

/** Inputs of an Overlay: one member's qcow2 disk, backed by the base image on the same host. */
export interface OverlayInputs {
    conn: KvmConnection;
    privateKey?: string;
    storagePool: string;
    /** Volume name, `<domain>-<tag>.qcow2` (the tag changes with the base, so a new base = a new volume). */
    volume: string;
    /** Path of the base volume (from libvirt) and its format. */
    basePath: string;
    baseFormat: "qcow2" | "raw";
    capacityBytes: number;
}

export interface OverlayOutputs extends OverlayInputs {
    path: string;
}

const REPLACE_ON = ["volume", "storagePool", "basePath", "baseFormat", "capacityBytes"] as const;

/** Type token of the Overlay dynamic resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const OVERLAY_TYPE = dynamicType("egress", "kvm:Overlay");

export const overlayProvider: pulumi.dynamic.ResourceProvider<OverlayInputs, OverlayOutputs> = {
    async create(inputs) {
        return withLibvirt(
            inputs.conn,
            inputs.privateKey,
            async (virsh) => {
                // A volume of this name is deleted only when no domain uses it (see clearLeftoverVolume).
                await clearLeftoverVolume(virsh, inputs.storagePool, inputs.volume, `overlay ${inputs.volume}`);
                const xml = overlayXml(inputs.volume, inputs.capacityBytes, inputs.basePath, inputs.baseFormat);
                return withNewVolume(virsh, inputs.storagePool, inputs.volume, xml, async (p) => ({
                    id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume),
                    outs: { ...inputs, path: p },
                }));
            },
            { member: memberOfVolumeName(inputs.volume) },
        );
    },

    ...memberVolumeLifecycle<OverlayInputs, (typeof REPLACE_ON)[number]>(REPLACE_ON),
};

/** A member's disk: qcow2 backed by the base image. One overlay per domain (two would fight over the write lock). */
export class Overlay extends LoadedDynamicResource {
    declare public readonly path: pulumi.Output<string>;
    declare public readonly volume: pulumi.Output<string>;

    constructor(
        name: string,
        args: { [K in keyof OverlayInputs]: pulumi.Input<OverlayInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(OVERLAY_TYPE, name, { ...args, path: undefined }, { ...opts, additionalSecretOutputs: ["privateKey"] });
    }
}
