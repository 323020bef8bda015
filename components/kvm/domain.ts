import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";
import {
    domainState,
    DomainState,
    GONE_STATES,
    ignoreNotFound,
    isNotFound,
    KvmConnection,
    LibvirtError,
    replaceDiff,
    Virsh,
    withLibvirt,
    withTempDir,
} from "./libvirt";
import { discoverAddress, GuestStoppedError, waitForAddress } from "./address";
import { consoleTail, firstDiskPath, removeConsoleLog } from "./console";
import { explainUnreachableDelete } from "./unreachable";
import { domainXml, DomainSpec, parseMetadata } from "./xml";
import { foreignInstallationMessage } from "../../src/model/installation";

/** Inputs of a Domain: one member's VM. */
export interface DomainInputs extends DomainSpec {
    conn: KvmConnection;
    privateKey?: string;
    /** Seconds `create` waits for the address; 0 = don't wait. Until known, later ups/refreshes look once each. */
    addressTimeoutSeconds: number;
}

export interface DomainOutputs extends DomainInputs {
    /** The guest's address, "" until known. */
    ipAddress: string;
    /** libvirt's view at the last create/read. Older state has none. */
    state?: DomainState;
    /**
     * False once a read found the domain missing, shut off, crashed, paused or suspended: the member is
     * gone, and the next `up` replaces it (like local:Process). Older state has none (= running).
     */
    running?: boolean;
}

/** Everything that changes the VM's definition. Not addressTimeoutSeconds or connection details. */
const REPLACE_ON = [
    "name",
    "domainType",
    "vcpu",
    "memoryMiB",
    "firmware",
    "overlayPath",
    "seedPath",
    "bridge",
    "network",
    "metadataNs",
    "metadata",
] as const;

/** Stops and undefines a domain (with its NVRAM and console log); succeeds when already gone or not running. */
export async function removeDomain(virsh: Virsh, name: string): Promise<void> {
    const disk = await firstDiskPath(virsh, name);
    try {
        await virsh(["destroy", name]);
    } catch (e) {
        if (!isNotFound(e) && !/not running/i.test((e as Error).message)) throw e;
    }
    await ignoreNotFound(() => virsh(["undefine", "--nvram", name]));
    if (disk) await removeConsoleLog(virsh, disk, name);
}

/** Type token of the Domain dynamic resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const DOMAIN_TYPE = dynamicType("egress", "kvm:Domain");

/**
 * Whether a domain of this name is defined, as this member's (its egress metadata names this member of
 * this stack and installation). Anything else of that name is not ours to touch: an error.
 */
export async function ownDomainExists(
    virsh: Virsh,
    inputs: Pick<DomainInputs, "name" | "metadata" | "metadataNs"> & { conn: { host: string } },
): Promise<boolean> {
    let exists = true;
    await virsh(["domstate", inputs.name]).catch((e) => {
        if (!isNotFound(e)) throw e;
        exists = false;
    });
    if (!exists) return false;
    const meta = await virsh(["metadata", inputs.name, "--uri", inputs.metadataNs, "--config"]).catch(() => "");
    const old = parseMetadata(meta, inputs.metadataNs);
    const m = inputs.metadata;
    if (!old || old.project !== m.project || old.stack !== m.stack || old.member !== m.member)
        throw new Error(
            `domain ${inputs.name} already exists on host ${inputs.conn.host} and is not egress member ${m.member} of ${m.project}/${m.stack}; remove or rename it`,
        );
    // The same member of another installation (a second checkout with this stack name): never ours to replace.
    if ((old.installation ?? "") !== (m.installation ?? ""))
        throw new Error(
            foreignInstallationMessage(
                `domain ${inputs.name} on host ${inputs.conn.host}`,
                m.installation ?? `${m.project}/${m.stack} (made before installation ids)`,
                old.installation,
            ),
        );
    return true;
}

/**
 * Defines and starts the domain, then waits up to addressTimeoutSeconds for its address (returned; ""
 * without a wait). A failure removes the domain and says what its serial console printed.
 */
export async function defineAndStart(virsh: Virsh, inputs: DomainInputs): Promise<string> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    return await withTempDir("egress-dom-", async (dir) => {
        const xml = path.join(dir, "domain.xml");
        fs.writeFileSync(xml, domainXml(inputs));
        await virsh(["define", xml]);
        try {
            await virsh(["start", inputs.name], { timeoutMs: 120000 });
            return await addressAfterStart(virsh, inputs);
        } catch (e) {
            await removeDomain(virsh, inputs.name).catch(() => undefined);
            throw e;
        }
    });
}

/** The address of a domain just started (addressTimeoutSeconds), or its console's tail in the error. */
async function addressAfterStart(virsh: Virsh, inputs: DomainInputs): Promise<string> {
    const wait = inputs.addressTimeoutSeconds;
    if (wait <= 0) return "";
    const tail = async () =>
        (await consoleTail(virsh, inputs.overlayPath, inputs.name).catch(
            (e) => `(console log unreadable: ${(e as Error).message})`,
        )) || "(empty: the firmware or boot loader printed nothing)";
    const t0 = Date.now();
    const where = `domain ${inputs.name} on host ${inputs.conn.host}`;
    const ipAddress = await waitForAddress(virsh, inputs.name, wait).catch(async (e) => {
        if (!(e as GuestStoppedError).guestState) throw e;
        const { guestState, guestReason } = e as GuestStoppedError;
        throw new Error(
            `${where} stopped while booting, ${((Date.now() - t0) / 1000).toFixed(0)} s after start: it is ${guestState}${guestReason ? ` (${guestReason})` : ""}, so it will never get an address; not waiting out addressTimeoutSeconds (${wait} s). Last lines of its serial console:\n${await tail()}`,
        );
    });
    // A guest with no address after the whole wait is broken far more often than slow: fail with what its console said.
    if (!ipAddress)
        throw new Error(
            `${where} has no address after ${wait} s (addressTimeoutSeconds; no source answered: guest agent, ARP, DHCP lease). Last lines of its serial console:\n${await tail()}`,
        );
    return ipAddress;
}

export const domainProvider: pulumi.dynamic.ResourceProvider<DomainInputs, DomainOutputs> = {
    async create(inputs) {
        return withLibvirt(
            inputs.conn,
            inputs.privateKey,
            async (virsh) => {
                // A domain of this name left by an interrupted run of this very member is ours to replace.
                if (await ownDomainExists(virsh, inputs)) await removeDomain(virsh, inputs.name);
                const ipAddress = await defineAndStart(virsh, inputs);
                return {
                    id: `${inputs.conn.host}/${inputs.name}`,
                    outs: { ...inputs, ipAddress, state: "running" as const, running: true },
                };
            },
            { member: inputs.metadata?.member },
        );
    },

    async read(id, props) {
        const p = props as DomainOutputs;
        return withLibvirt(
            p.conn,
            p.privateKey,
            async (virsh) => {
                // A host we cannot reach throws here: it says nothing about its guests.
                const state = await domainState(virsh, p.name);
                if (GONE_STATES.includes(state)) return { id, props: { ...p, state, running: false } };
                let found: string | undefined;
                try {
                    found = await discoverAddress(virsh, p.name);
                } catch (e) {
                    if (isNotFound(e)) return { id, props: { ...p, state: "missing" as const, running: false } };
                    // No session (key, TCP, host key, auth): the read fails. Anything else (no source answered)
                    // is one failed lookup, which never erases a known address.
                    if (["key", "tcp", "host-key", "ssh-auth"].includes((e as LibvirtError).stage)) throw e;
                }
                // An address that changed (a new DHCP lease) replaces the old one.
                return { id, props: { ...p, state, running: true, ipAddress: found ?? p.ipAddress } };
            },
            { member: p.metadata?.member },
        );
    },

    async diff(_id, olds, news) {
        const { replaces, changes } = replaceDiff(olds, news, REPLACE_ON);
        // A domain a read found gone (missing, shut off, crashed, paused) is replaced, as local:Process is.
        if (olds.running === false) replaces.push("running");
        // An address still unknown makes `up` look again (shown as an update; one quick round, no wait).
        // The name is fixed per member: the old VM must go before its replacement is defined.
        return {
            changes:
                changes ||
                replaces.length > 0 ||
                !olds.ipAddress ||
                olds.addressTimeoutSeconds !== news.addressTimeoutSeconds,
            replaces,
            deleteBeforeReplace: true,
        };
    },

    /**
     * Nothing on the host changes here. A still-unknown address is looked up once, without waiting:
     * only `create` waits (addressTimeoutSeconds), so `up` of a pool whose guests have no address yet
     * (scaling, config edits) never blocks for minutes. A failed lookup keeps what state knew.
     */
    async update(_id, olds, news) {
        let ipAddress = olds.ipAddress;
        if (!ipAddress) {
            const found = await withLibvirt(news.conn, news.privateKey, (virsh) => discoverAddress(virsh, news.name), {
                member: news.metadata?.member,
            }).catch(() => undefined);
            ipAddress = found ?? "";
        }
        return { outs: { ...olds, ...news, ipAddress, state: olds.state, running: olds.running } };
    },

    async delete(_id, props) {
        // An unreachable host names the ways out (retainOnDelete, `egress forget`) instead of failing forever.
        await withLibvirt(props.conn, props.privateKey, (virsh) => removeDomain(virsh, props.name), {
            member: props.metadata?.member,
        }).catch((e) => {
            throw explainUnreachableDelete(e, `domain ${props.name}`, props.metadata?.member);
        });
    },
};

/** A member's VM: UEFI (or BIOS), file disks, seed CD on virtio-scsi, guest-agent channel, egress metadata. */
export class Domain extends LoadedDynamicResource {
    declare public readonly ipAddress: pulumi.Output<string>;
    declare public readonly state: pulumi.Output<DomainState | undefined>;
    declare public readonly running: pulumi.Output<boolean | undefined>;

    constructor(
        name: string,
        args: { [K in keyof DomainInputs]: pulumi.Input<DomainInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            DOMAIN_TYPE,
            name,
            { ...args, ipAddress: undefined, state: undefined, running: undefined },
            { ...opts, additionalSecretOutputs: ["privateKey"] },
        );
    }
}
