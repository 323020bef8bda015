/**
 * What a pool's KVM members on one host share, kept once on that host rather than once per member in state
 * (issue 33), as the Kubernetes kind keeps its pool's template in a ConfigMap: a small JSON volume in the
 * host's storage pool, `<installation prefix>tpl-<pool>-<digest8>.json`, which a member's create reads
 * (member-provider.ts). The digest covers everything that defines a member's VM and seed, so new content
 * is a new volume, and the members that name it are replaced (as any change of their spec replaced them).
 * One Template resource per (pool, content, host) makes and removes the volume.
 */
import * as pulumi from "@pulumi/pulumi";
import { createHash } from "node:crypto";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import { ignoreNotFound, KvmConnection, Virsh, volumePath, withLibvirt, withTempDir } from "./libvirt";
import type { MemberMetadata } from "./xml";
import { deleteVolume, uploadInto, uploadTargetXml, volumeId, withNewVolume } from "./volumes";
import { explainUnreachableDelete } from "./unreachable";
import { configureKvm, hostSession, HostRef, keyFor } from "./stack-config";

/** What defines a pool's members on one host: everything of a member but its name. */
export interface KvmTemplate {
    /** Domain names are `<prefix><member>` (naming.ts installationPrefix). */
    prefix: string;
    storagePool: string;
    base: { volume: string; path: string; format: "qcow2" | "raw"; capacityBytes: number };
    domain: {
        domainType: "kvm" | "qemu";
        vcpu: number;
        memoryMiB: number;
        firmware: "uefi" | "bios";
        bridge?: string;
        network?: string;
        metadataNs: string;
        /** The domain's egress metadata, its `member` left out. */
        metadata: Omit<MemberMetadata, "member">;
    };
    seed: { userData: string; userDataEncoding?: "base64"; installGuestAgent: boolean; vendorData?: string };
}

/** The first 16 hex digits of the sha256 of `v` as JSON. */
export function templateDigest(v: unknown): string {
    return createHash("sha256").update(JSON.stringify(v)).digest("hex").slice(0, 16);
}

/** Reads and parses a template volume. */
export async function readTemplate(virsh: Virsh, pool: string, volume: string): Promise<KvmTemplate> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    return withTempDir("egress-tpl-", async (dir) => {
        const file = path.join(dir, "tpl.json");
        await virsh(["vol-download", "--pool", pool, volume, file]).catch((e) => {
            (e as Error).message = `member template ${volume} in pool ${pool}: ${(e as Error).message}`;
            throw e;
        });
        // A pool whose volumes are rounded up in size (LVM) pads the download with NUL bytes.
        return JSON.parse(fs.readFileSync(file, "utf8").replace(/\0+$/, "")) as KvmTemplate;
    });
}

/** Inputs of a Template: where it goes and its content (a secret: the user-data often holds credentials). */
export interface TemplateInputs {
    at: HostRef;
    volume: string;
    /** The KvmTemplate as JSON. */
    content: string;
}

/** What a delete needs when config may no longer list the host: the connection (no key) and pool. */
export interface TemplateOutputs {
    at: HostRef;
    conn: KvmConnection;
    storagePool: string;
    volume: string;
    digest: string;
}

/** Type token of the Template dynamic resource. */
export const TEMPLATE_TYPE = dynamicType("egress", "kvm:Template");

/** Writes the template volume (anew when a leftover of the same name, so the same content, is there). */
async function writeTemplate(virsh: Virsh, pool: string, volume: string, content: string): Promise<void> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    await withTempDir("egress-tpl-", async (dir) => {
        const file = path.join(dir, "tpl.json");
        fs.writeFileSync(file, content, { mode: 0o600 });
        // Only members' creates read it, and its name is its content's: a leftover is deleted and written again.
        if (await volumePath(virsh, pool, volume)) await deleteVolume(virsh, pool, volume);
        await withNewVolume(virsh, pool, volume, uploadTargetXml(volume, file), () =>
            uploadInto(virsh, pool, volume, file),
        );
    });
}

const digestOfContent = (content: string) => templateDigest(content);

export const templateProvider: pulumi.dynamic.ResourceProvider<TemplateInputs, TemplateOutputs> = {
    configure: configureKvm,

    async create(inputs) {
        const { conn, privateKey, storagePool } = hostSession(inputs.at);
        await withLibvirt(conn, privateKey, (virsh) =>
            writeTemplate(virsh, storagePool, inputs.volume, inputs.content),
        );
        return {
            id: volumeId(conn.host, storagePool, inputs.volume),
            outs: { at: inputs.at, conn, storagePool, volume: inputs.volume, digest: digestOfContent(inputs.content) },
        };
    },

    async diff(_id, olds, news) {
        const moved = olds.at.entry !== news.at.entry || olds.at.host !== news.at.host || olds.volume !== news.volume;
        // Same name, other content: only the base's path or size can differ (the name covers the rest).
        const changes = moved || olds.digest !== digestOfContent(news.content);
        // The same name on the same host is the same volume: a replace must delete the old one first.
        return { changes, replaces: moved ? ["volume"] : [], deleteBeforeReplace: true };
    },

    async update(_id, _olds, news) {
        const { conn, privateKey, storagePool } = hostSession(news.at);
        await withLibvirt(conn, privateKey, (virsh) => writeTemplate(virsh, storagePool, news.volume, news.content));
        return {
            outs: { at: news.at, conn, storagePool, volume: news.volume, digest: digestOfContent(news.content) },
        };
    },

    async delete(_id, props) {
        await withLibvirt(props.conn, keyFor(props.at.entry, props.conn), (virsh) =>
            ignoreNotFound(() => deleteVolume(virsh, props.storagePool, props.volume)),
        ).catch((e) => {
            throw explainUnreachableDelete(e, `member template ${props.volume}`, undefined);
        });
    },
};

/** A pool's member template on one host. */
export class Template extends LoadedDynamicResource {
    declare public readonly volume: pulumi.Output<string>;

    constructor(
        name: string,
        args: { [K in keyof TemplateInputs]: pulumi.Input<TemplateInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            TEMPLATE_TYPE,
            name,
            { ...args, conn: undefined, storagePool: undefined, digest: undefined },
            { ...opts, additionalSecretOutputs: ["content"] },
        );
    }
}
