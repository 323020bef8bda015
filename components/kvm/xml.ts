/**
 * libvirt XML for the KVM kind: domain and volume definitions, and the metadata egress stamps on domains.
 * Pure functions (serialized with the dynamic providers), tested directly.
 */

export function xmlEscape(s: string): string {
    return s
        .replace(/&/g, "&amp;")
        .replace(/</g, "&lt;")
        .replace(/>/g, "&gt;")
        .replace(/"/g, "&quot;")
        .replace(/'/g, "&apos;");
}

/** What `egress gc` needs to find a domain that state forgot. */
export interface MemberMetadata {
    project: string;
    stack: string;
    pool: string;
    member: string;
    provider: string;
    /**
     * The installation id (issue 17 §3). Absent on domains of a stack made before ids, and kept absent for
     * it: `metadata` forces a replace, so adding the field would recreate every legacy member.
     */
    installation?: string;
}

export interface DomainSpec {
    name: string;
    /** `kvm` with /dev/kvm on the host, `qemu` (TCG) elsewhere. */
    domainType: "kvm" | "qemu";
    vcpu: number;
    memoryMiB: number;
    firmware: "uefi" | "bios";
    /** Paths from libvirt (`vol-path`): disks are `type="file"` because AppArmor only grants file paths. */
    overlayPath: string;
    seedPath: string;
    /** Exactly one of bridge or network. */
    bridge?: string;
    network?: string;
    metadata: MemberMetadata;
    metadataNs: string;
}

/** Metadata element (namespaced) carried in the domain's `<metadata>`. */
export function metadataXml(m: MemberMetadata, ns: string): string {
    const a = (k: keyof MemberMetadata) => `${k}="${xmlEscape(m[k] ?? "")}"`;
    return `<egress:member xmlns:egress="${xmlEscape(ns)}" ${a("project")} ${a("stack")} ${a("pool")} ${a("member")} ${a("provider")}${m.installation ? ` ${a("installation")}` : ""}/>`;
}

/** Reads egress metadata back from `virsh dumpxml` output; undefined when the domain is not ours. */
export function parseMetadata(domainXml: string, ns: string): MemberMetadata | undefined {
    const esc = ns.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    // A whole domain (prefix + xmlns), or `virsh metadata --uri NS` output (bare element, no xmlns).
    const m =
        new RegExp(`<(\\w+):member\\b[^>]*xmlns:\\1=["']${esc}["'][^>]*>`).exec(domainXml) ??
        /^\s*<member\b[^>]*>/.exec(domainXml);
    if (!m) return undefined;
    const attr = (k: string) => {
        const v = new RegExp(`\\b${k}=["']([^"']*)["']`).exec(m[0]);
        return v
            ? v[1]
                  .replace(/&quot;/g, '"')
                  .replace(/&apos;/g, "'")
                  .replace(/&lt;/g, "<")
                  .replace(/&gt;/g, ">")
                  .replace(/&amp;/g, "&")
            : "";
    };
    const installation = attr("installation");
    return {
        project: attr("project"),
        stack: attr("stack"),
        pool: attr("pool"),
        member: attr("member"),
        provider: attr("provider"),
        ...(installation ? { installation } : {}),
    };
}

/** Volume name of a domain's console log. */
export function consoleLogName(domain: string): string {
    return `${domain}.console.log`;
}

/** Where the console log goes: the overlay's directory (a `dir` pool), named after the domain. */
export function consoleLogPath(overlayPath: string, domain: string): string {
    const dir = overlayPath.replace(/\/[^/]*$/, "");
    return `${dir}/${consoleLogName(domain)}`;
}

/**
 * The domain. UEFI by default (`firmware="efi"`, secure boot off; Debian 13 cloud images hang after GRUB
 * under SeaBIOS), BIOS on request; `<acpi/>` always (UEFI needs it). The seed CD sits on virtio-scsi:
 * Debian's cloud kernel has no AHCI, so a SATA CD on q35 is invisible to cloud-init.
 */
export function domainXml(d: DomainSpec): string {
    const e = xmlEscape;
    const os =
        d.firmware === "uefi"
            ? `<os firmware="efi"><type arch="x86_64" machine="q35">hvm</type><firmware><feature enabled="no" name="secure-boot"/><feature enabled="no" name="enrolled-keys"/></firmware><boot dev="hd"/></os>`
            : `<os><type arch="x86_64" machine="q35">hvm</type><boot dev="hd"/></os>`;
    const nic = d.bridge
        ? `<interface type="bridge"><source bridge="${e(d.bridge)}"/><model type="virtio"/><rom enabled="no"/></interface>`
        : `<interface type="network"><source network="${e(d.network ?? "default")}"/><model type="virtio"/><rom enabled="no"/></interface>`;
    return [
        `<domain type="${d.domainType}">`,
        `  <name>${e(d.name)}</name>`,
        `  <metadata>${metadataXml(d.metadata, d.metadataNs)}</metadata>`,
        `  <memory unit="MiB">${d.memoryMiB}</memory>`,
        `  <vcpu>${d.vcpu}</vcpu>`,
        `  ${os}`,
        `  <features><acpi/></features>`,
        d.domainType === "kvm"
            ? `  <cpu mode="host-passthrough"/>`
            : `  <cpu mode="custom" match="exact"><model fallback="allow">qemu64</model></cpu>`,
        `  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>restart</on_crash>`,
        `  <devices>`,
        `    <disk type="file" device="disk"><driver name="qemu" type="qcow2"/><source file="${e(d.overlayPath)}"/><target dev="vda" bus="virtio"/></disk>`,
        `    <controller type="scsi" index="0" model="virtio-scsi"/>`,
        `    <disk type="file" device="cdrom"><driver name="qemu" type="raw"/><source file="${e(d.seedPath)}"/><target dev="sda" bus="scsi"/><readonly/></disk>`,
        `    ${nic}`,
        `    <channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>`,
        // Logged to a file (virtlogd), or a failed boot leaves nothing to read (see console.ts).
        `    <serial type="pty"><log file="${e(consoleLogPath(d.overlayPath, d.name))}" append="on"/><target port="0"/></serial><console type="pty"><target type="serial" port="0"/></console>`,
        `    <rng model="virtio"><backend model="random">/dev/urandom</backend></rng>`,
        `  </devices>`,
        `</domain>`,
    ].join("\n");
}

/** An empty volume of `bytes` (seed ISO, upload target). */
export function volumeXml(name: string, bytes: number, format: string): string {
    return `<volume type="file"><name>${xmlEscape(name)}</name><capacity unit="bytes">${bytes}</capacity><target><format type="${xmlEscape(format)}"/></target></volume>`;
}

/** A qcow2 overlay backed by `backingPath` (a path from libvirt). */
export function overlayXml(name: string, capacityBytes: number, backingPath: string, backingFormat: string): string {
    return (
        `<volume type="file"><name>${xmlEscape(name)}</name><capacity unit="bytes">${capacityBytes}</capacity>` +
        `<target><format type="qcow2"/></target>` +
        `<backingStore><path>${xmlEscape(backingPath)}</path><format type="${xmlEscape(backingFormat)}"/></backingStore></volume>`
    );
}

/** Path of the backing file of a volume from `vol-dumpxml`, if it has one. */
export function backingPathOf(volXml: string): string | undefined {
    const m = /<backingStore>[\s\S]*?<path>([^<]+)<\/path>/.exec(volXml);
    return m ? m[1] : undefined;
}
