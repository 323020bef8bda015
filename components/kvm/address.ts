/**
 * Address discovery for a domain: guest agent first, then the host's ARP table, then DHCP leases of a
 * libvirt network (`virsh domifaddr --source agent|arp|lease`). Plain functions, serialized with the
 * Domain provider.
 *
 * One source failing (the agent is not up yet) means the guest is still provisioning; every source
 * failing, or a dead connection, is a transient error. An empty answer is never "gone".
 */
import { libvirtError, LibvirtError, Virsh } from "./libvirt";

const ADDRESS_SOURCES = ["agent", "arp", "lease"] as const;

/** Usable addresses in `domifaddr` output, IPv4 first; loopback and link-local skipped. */
export function parseDomifaddr(out: string): string[] {
    const v4: string[] = [];
    const v6: string[] = [];
    for (const line of out.split("\n")) {
        const m = /^\s*\S+\s+\S+\s+(ipv4|ipv6)\s+([0-9a-fA-F.:]+)(?:\/\d+)?\s*$/.exec(line);
        if (!m) continue;
        const a = m[2];
        if (m[1] === "ipv4" && !a.startsWith("127.") && !a.startsWith("169.254.")) v4.push(a);
        if (m[1] === "ipv6" && a !== "::1" && !/^fe80:/i.test(a)) v6.push(a);
    }
    return [...v4, ...v6];
}

/**
 * One round over the sources. Resolves the first address found, or undefined while the guest is still
 * coming up. Throws a transient LibvirtError when every source failed or the connection is dead.
 */
export async function discoverAddress(virsh: Virsh, domain: string): Promise<string | undefined> {
    const failures: string[] = [];
    for (const source of ADDRESS_SOURCES) {
        try {
            const found = parseDomifaddr(await virsh(["domifaddr", domain, "--source", source], { timeoutMs: 20000 }));
            if (found.length) return found[0];
        } catch (e) {
            const le = e as LibvirtError;
            // A connection that cannot be made fails every source the same way: stop here.
            if (le.stage && le.stage !== "libvirt") throw e;
            if (le.notFound) throw e;
            failures.push(`${source}: ${le.message}`);
        }
    }
    if (failures.length === ADDRESS_SOURCES.length)
        throw libvirtError(
            `no address source answered for domain ${domain} (${failures.join("; ")})`,
            "libvirt",
            false,
            true,
        );
    return undefined;
}

/** What `virsh domstate --reason` says: the state and libvirt's reason for it (`paused`, `user`). */
export function parseDomstateReason(out: string): { state: string; reason: string } {
    const m = /^\s*(.+?)\s*(?:\((.*)\))?\s*$/.exec(out.trim().toLowerCase());
    return { state: m?.[1] ?? "unknown", reason: m?.[2] ?? "" };
}

/** States of a booting guest that no wait will change into an address: stop waiting at once. */
const STOPPED_BOOTING = ["paused", "shut off", "crashed", "pmsuspended", "in shutdown", "shutdown"];

/** Thrown by waitForAddress when the guest stopped while booting; the Domain create adds the console tail. */
export interface GuestStoppedError extends Error {
    guestState: string;
    guestReason: string;
}

/**
 * Polls until an address is known or `timeoutSeconds` passed; "" on timeout (the next `up` or
 * `refresh` tries again). Rounds where every source failed are retried until the deadline, then thrown.
 * Each round first asks the domain's state: a guest that crashed, paused or shut off while booting will
 * never get an address, so that throws a GuestStoppedError at once instead of waiting out the timeout.
 */
export async function waitForAddress(
    virsh: Virsh,
    domain: string,
    timeoutSeconds: number,
    intervalMs = 2000,
): Promise<string> {
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (;;) {
        let last: unknown;
        try {
            const { state, reason } = parseDomstateReason(
                await virsh(["domstate", domain, "--reason"], { timeoutMs: 20000 }),
            );
            if (STOPPED_BOOTING.includes(state)) {
                const e = new Error(
                    `domain ${domain} stopped while booting: it is ${state}${reason ? ` (${reason})` : ""}`,
                ) as GuestStoppedError;
                e.guestState = state;
                e.guestReason = reason;
                throw e;
            }
            const a = await discoverAddress(virsh, domain);
            if (a) return a;
            last = undefined;
        } catch (e) {
            if ((e as LibvirtError).notFound || (e as GuestStoppedError).guestState) throw e;
            last = e;
        }
        if (Date.now() + intervalMs > deadline) {
            if (last) throw last;
            return "";
        }
        await new Promise((r) => setTimeout(r, intervalMs));
    }
}
