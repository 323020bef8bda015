import { z } from "zod";
import { providerCommonFields } from "../shared/config";
import { identifier, localPath, port, secretString } from "../../src/model/fields";
import { hostAddressProblem } from "./libvirt";
import type { ConfigProblem, Placement } from "../../src/model";

/** SSH transport to the libvirt hosts. Host keys are always verified against `knownHosts`. */
const sshSchema = z.strictObject({
    /** Remote user libvirt is reached as. */
    user: z.string().min(1),
    /** Private key material (prefer a Pulumi secret). Exactly one of `privateKey` or `privateKeyPath`. */
    privateKey: secretString().optional(),
    /** Path to a private key file on the machine running Pulumi (`~/` is the user's home). */
    privateKeyPath: localPath().optional(),
    /** known_hosts content for the hosts (required: a missing host key is an error, never a downgrade). */
    knownHosts: z.string().min(1).optional(),
    /** Path to a known_hosts file (`~/` is the user's home). Exactly one of `knownHosts` or `knownHostsPath`. */
    knownHostsPath: localPath().optional(),
});

const hostSchema = z.strictObject({
    /** Identifier used in resource names and messages. */
    name: identifier(),
    /**
     * Address sshd listens on: an RFC 1123 host name, an IPv4 address or an IPv6 address (no brackets).
     * It goes into the libvirt URI, so anything else (`?`, `#`, `/`, `@`, `:port`, spaces) is refused.
     */
    address: z.string().superRefine((v, ctx) => {
        const problem = hostAddressProblem(v);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
    port: port().default(22),
    /** libvirt storage pool holding base images, overlays and seed ISOs. */
    storagePool: z.string().min(1).default("default"),
    /** Host bridge the guest NIC attaches to (e.g. `br0`). Exactly one of `bridge` or `network`. */
    bridge: z.string().min(1).optional(),
    /** libvirt network the guest NIC attaches to. */
    network: z.string().min(1).optional(),
    /** Placement zone; `placement.zone` of a pool picks the host. */
    zone: z.string().min(1).optional(),
    /** Pool these hosts serve by default (informational). */
    pool: z.string().optional(),
    /** libvirt domain type: `kvm` where /dev/kvm exists, `qemu` (TCG) elsewhere. */
    domainType: z.enum(["kvm", "qemu"]).default("kvm"),
});

/** A whole number from `min` to `max`, with one message that says so. */
const wholeNumber = (min: number, max: number, unit: string) => {
    const message = `must be a whole number of ${unit} from ${min} to ${max}`;
    return z.number({ message }).int({ message }).min(min, { message }).max(max, { message });
};

/**
 * A cloud image cached per host as volume `base-<entry>-<key>.<format>`. The digest of a key never
 * changes: a new image is a new key (the old base stays under its overlays).
 */
const imageSchema = z.strictObject({
    /** http(s) URL (or file:// on the machine running Pulumi), streamed and sha256-verified before upload. */
    url: z.string().url(),
    sha256: z.string().regex(/^[a-f0-9]{64}$/, { message: "must be 64 lower-case hex digits" }),
    format: z.enum(["qcow2", "raw"]).default("qcow2"),
    firmware: z.enum(["uefi", "bios"]).default("uefi"),
    /**
     * Deadlines of the image's download and of its upload to and verification on each host
     * (components/kvm/transfer.ts): `graceSeconds + size / minKiBPerSecond` in all, and no `idleSeconds`
     * without a byte. A miss fails the `up` as transient, naming the deadline.
     * @default { minKiBPerSecond: 512, graceSeconds: 60, idleSeconds: 120 }
     */
    // Optional all through: the defaults live in transferLimits (./transfer.ts), where the BaseImage
    // provider also reads state written before deadlines existed.
    transfer: z
        .strictObject({
            /** Slowest average rate accepted, in KiB/s. @default 512 */
            minKiBPerSecond: wholeNumber(1, 10 * 1024 * 1024, "KiB/s").optional(),
            /** Added to every total deadline (connecting, a slow start), in seconds. @default 60 */
            graceSeconds: wholeNumber(0, 3600, "seconds").optional(),
            /** Longest wait without a byte, in seconds. @default 120 */
            idleSeconds: wholeNumber(1, 3600, "seconds").optional(),
        })
        .optional(),
});

/** Size of a member VM. */
const machineTypeSchema = z.strictObject({
    vcpu: z.number().int().min(1).max(64),
    memoryMiB: z.number().int().min(128),
});

/** `type: kvm` — libvirt hosts reached over SSH. */
export const kvmProviderSchema = z
    .strictObject({
        type: z.literal("kvm"),
        ...providerCommonFields,
        ssh: sshSchema,
        hosts: z.array(hostSchema).min(1, { message: "must list at least one host" }),
        images: z.record(identifier(), imageSchema),
        machineTypes: z.record(identifier(), machineTypeSchema).default({ small: { vcpu: 1, memoryMiB: 512 } }),
        /** Install and enable qemu-guest-agent from a vendor-data script. @default true */
        installGuestAgent: z.boolean().default(true),
        /**
         * Extra vendor-data for every member (a cloud-config or a script), sent beside the guest-agent
         * bootstrap as MIME multipart (each part declared text/plain). Unset: only the bootstrap.
         */
        vendorData: z.string().min(1).optional(),
        /**
         * How long creating a member waits for its IP address, in seconds. 0 = don't wait. Until the
         * address is known the member's `host` is "", and every later `up` or `refresh` looks once
         * (without waiting). @default 300
         */
        addressTimeoutSeconds: z.number().int().min(0).max(3600).default(300),
    })
    .superRefine((v, ctx) => {
        if (!v.ssh.privateKey === !v.ssh.privateKeyPath)
            ctx.addIssue({
                code: "custom",
                path: ["ssh"],
                message: "exactly one of `privateKey` or `privateKeyPath` is required",
            });
        if (!v.ssh.knownHosts === !v.ssh.knownHostsPath)
            ctx.addIssue({
                code: "custom",
                path: ["ssh"],
                message: "exactly one of `knownHosts` or `knownHostsPath` is required (host keys are always verified)",
            });
        v.hosts.forEach((h, i) => {
            if (!h.bridge === !h.network)
                ctx.addIssue({
                    code: "custom",
                    path: ["hosts", i],
                    message: "exactly one of `bridge` or `network` is required",
                });
        });
    });

export type KvmProviderConfig = z.infer<typeof kvmProviderSchema>;

/** A pool's placement on a KVM entry: the zone of one of its hosts, and keys of its image and machine-type catalogs. */
export function checkKvmPlacement(entry: KvmProviderConfig, placement: Placement, at: string): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    const zones = entry.hosts.map((h) => h.zone ?? h.name);
    if (placement.zone && !zones.includes(placement.zone))
        out.push({
            path: `${at}.zone`,
            rule: `must be the zone of a host of this provider (${zones.join(", ")})`,
            value: placement.zone,
        });
    const images = Object.keys(entry.images);
    if (!placement.image && images.length !== 1)
        out.push({
            path: `${at}.image`,
            rule: `is required when the provider has ${images.length} images (${images.join(", ")})`,
        });
    if (placement.image && !images.includes(placement.image))
        out.push({
            path: `${at}.image`,
            rule: `must name an image of this provider (${images.join(", ")})`,
            value: placement.image,
        });
    const types = Object.keys(entry.machineTypes);
    if (placement.machineType && !types.includes(placement.machineType))
        out.push({
            path: `${at}.machineType`,
            rule: `must name a machine type of this provider (${types.join(", ")})`,
            value: placement.machineType,
        });
    return out;
}
