/**
 * The stack's KVM provider entries as the engine's dynamic-provider process sees them: the engine hands a
 * dynamic provider the whole stack config (decrypted) in `configure`, and the member and template
 * resources (member-provider.ts, member-template.ts) read their host's connection and key from it rather
 * than keeping a copy per member in state (issue 33: the key was six copies, 4.1 KB, per member).
 * What state keeps instead is the entry's and the host's names, and the connection without the key (a
 * delete must reach a host that config no longer lists).
 */
import type * as pulumi from "@pulumi/pulumi";
import type { KvmProviderConfig } from "./config";
import type { KvmConnection } from "./libvirt";
import { connectionFor, KvmHost, privateKeyText } from "./naming";

/** `egress:providers` as configure gave it (JSON text), or undefined before configure. */
let providersText: string | undefined;

/** Where a member's host is: its provider entry and the host's name in it. */
export interface HostRef {
    entry: string;
    host: string;
}

/** The `configure` every KVM dynamic provider has: it keeps the stack's provider entries. */
export async function configureKvm(req: pulumi.dynamic.ConfigureRequest): Promise<void> {
    const v = req.config.get("egress:providers") as unknown;
    providersText = v === undefined ? undefined : typeof v === "string" ? v : JSON.stringify(v);
}

/** For tests and tools that run a provider in-process: the entries configure would have given. */
export function setKvmProvidersConfig(providers: Record<string, unknown> | undefined): void {
    providersText = providers === undefined ? undefined : JSON.stringify(providers);
}

/**
 * The validated entry `name`, or an error naming what is missing. `from` is `egress:providers` as JSON
 * text (the service's recovery, which runs outside the engine); unset: what configure gave.
 */
export function configuredEntry(name: string, from: string | undefined = providersText): KvmProviderConfig {
    if (from === undefined)
        throw new Error(
            `kvm provider entry \`${name}\`: the stack's config has no \`egress:providers\` (the engine did not configure this provider)`,
        );
    const all = JSON.parse(from) as Record<string, unknown>;
    const raw = all[name];
    if (!raw)
        throw new Error(
            `kvm provider entry \`${name}\` is no longer in the stack's \`egress:providers\`: its SSH key is needed to reach its hosts. Put the entry back until its members are gone, or \`egress forget\` them`,
        );
    // Loaded here, not at the top: the schema pulls zod, which the entry points that only name types skip.
    const { kvmProviderSchema } = require("./config") as typeof import("./config");
    const parsed = kvmProviderSchema.safeParse(raw);
    if (!parsed.success)
        throw new Error(
            `kvm provider entry \`${name}\` in the stack's config is not valid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        );
    return parsed.data as KvmProviderConfig;
}

/** The host `ref` names in its entry, or an error saying it is gone. */
export function configuredHost(ref: HostRef, from?: string): { entry: KvmProviderConfig; host: KvmHost } {
    const entry = from === undefined ? configuredEntry(ref.entry) : configuredEntry(ref.entry, from);
    const host = entry.hosts.find((h) => h.name === ref.host);
    if (!host)
        throw new Error(
            `host \`${ref.host}\` is no longer in kvm provider entry \`${ref.entry}\`; a member placed on it needs it to be created or updated`,
        );
    return { entry, host };
}

/** The connection (no key) and key to reach the host `ref` names, from config. */
export function hostSession(
    ref: HostRef,
    from?: string,
): { conn: KvmConnection; privateKey: string | undefined; storagePool: string } {
    const { entry, host } = configuredHost(ref, from);
    return { conn: connectionFor(entry, host), privateKey: privateKeyText(entry), storagePool: host.storagePool };
}

/**
 * The key for a host state already knows the connection of (a delete, a read): the entry's, from config,
 * unless the connection names a key file. An entry gone from config is an error only when its key is needed.
 */
export function keyFor(entryName: string, conn: KvmConnection, from?: string): string | undefined {
    if (conn.privateKeyPath) return undefined;
    return privateKeyText(from === undefined ? configuredEntry(entryName) : configuredEntry(entryName, from));
}
