import * as pulumi from "@pulumi/pulumi";
import { KvmConnection, volumePath, withLibvirt } from "./libvirt";
import { deleteVolume, volumeId, withNewVolume } from "./volumes";
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

export const overlayProvider: pulumi.dynamic.ResourceProvider<OverlayInputs, OverlayOutputs> = {
    async create(inputs) {
        const fs = require("node:fs") as typeof import("node:fs");
        const os = require("node:os") as typeof import("node:os");
        const path = require("node:path") as typeof import("node:path");
        return withLibvirt(inputs.conn, inputs.privateKey, async (virsh) => {
            const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-ovl-"));
            try {
                const xml = path.join(dir, "vol.xml");
                fs.writeFileSync(xml, overlayXml(inputs.volume, inputs.capacityBytes, inputs.basePath, inputs.baseFormat));
                // A leftover from an interrupted run carries no state of ours: start clean.
                await deleteVolume(virsh, inputs.storagePool, inputs.volume);
                await virsh(["vol-create", inputs.storagePool, xml]);
                return await withNewVolume(virsh, inputs.storagePool, inputs.volume, async () => {
                    const p = await volumePath(virsh, inputs.storagePool, inputs.volume);
                    if (!p) throw new Error(`overlay ${inputs.volume} vanished right after creation in pool ${inputs.storagePool}`);
                    return { id: volumeId(inputs.conn.host, inputs.storagePool, inputs.volume), outs: { ...inputs, path: p } };
                });
            } finally {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        });
    },

    async diff(_id, olds, news) {
        const replaces: string[] = REPLACE_ON.filter((k) => olds[k] !== news[k]);
        if (olds.conn?.host !== news.conn?.host) replaces.push("conn");
        const changes = replaces.length > 0 || JSON.stringify(olds.conn) !== JSON.stringify(news.conn) || olds.privateKey !== news.privateKey;
        return { changes, replaces, deleteBeforeReplace: false };
    },

    async update(_id, olds, news) {
        return { outs: { ...olds, ...news, path: olds.path } };
    },

    async delete(_id, props) {
        await withLibvirt(props.conn, props.privateKey, (virsh) => deleteVolume(virsh, props.storagePool, props.volume));
    },
};

/** A member's disk: qcow2 backed by the base image. One overlay per domain (two would fight over the write lock). */
export class Overlay extends pulumi.dynamic.Resource {
    declare public readonly path: pulumi.Output<string>;
    declare public readonly volume: pulumi.Output<string>;

    constructor(name: string, args: { [K in keyof OverlayInputs]: pulumi.Input<OverlayInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(overlayProvider, name, { ...args, path: undefined }, { ...opts, additionalSecretOutputs: ["privateKey"] }, "egress", "kvm:Overlay");
    }
}
