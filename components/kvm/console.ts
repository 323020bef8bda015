/**
 * The serial console log of a member's domain: QEMU (through virtlogd) writes it to
 * `<name>.console.log` beside the member's overlay, in the same storage pool, so it can be read and
 * removed through libvirt alone (`vol-download`, `vol-delete`), with no shell on the host. When a guest
 * never gets an address, its tail goes into the error. Plain functions, serialized with the Domain provider.
 */
import { ignoreNotFound, isNotFound, Virsh, withTempDir } from "./libvirt";
import { consoleLogName } from "./xml";

/** Name of the pool holding `volPath`, or undefined when libvirt does not know that volume. */
async function poolOf(virsh: Virsh, volPath: string): Promise<string | undefined> {
    try {
        return (await virsh(["vol-pool", volPath])).trim() || undefined;
    } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
    }
}

// eslint-disable-next-line no-control-regex -- terminal escapes are what the tail strips
const ANSI_ESCAPES = /\x1b\[[0-9;?=]*[A-Za-z]/g;
// eslint-disable-next-line no-control-regex -- and other control characters (tabs and newlines stay)
const CONTROL_CHARACTERS = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** The last `maxLines` lines of a domain's console log ("" when there is none), control characters dropped. */
export async function consoleTail(virsh: Virsh, overlayPath: string, domain: string, maxLines = 30): Promise<string> {
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    const pool = await poolOf(virsh, overlayPath);
    if (!pool) return "";
    await virsh(["pool-refresh", pool]);
    return withTempDir("egress-console-", async (dir) => {
        const file = path.join(dir, "console.log");
        try {
            await virsh(["vol-download", "--pool", pool, consoleLogName(domain), file], { timeoutMs: 60000 });
        } catch (e) {
            if (isNotFound(e)) return "";
            throw e;
        }
        const text = fs
            .readFileSync(file)
            .subarray(-64 * 1024)
            .toString("utf8");
        const lines = text
            .replace(ANSI_ESCAPES, "")
            .replace(CONTROL_CHARACTERS, "")
            .split("\n")
            .map((l) => l.trimEnd())
            .filter(Boolean);
        return lines.slice(-maxLines).join("\n");
    });
}

/** Deletes a domain's console log (found through the pool of its disk `diskPath`); absent is fine. */
export async function removeConsoleLog(virsh: Virsh, diskPath: string, domain: string): Promise<void> {
    const pool = await poolOf(virsh, diskPath);
    if (!pool) return;
    await virsh(["pool-refresh", pool]);
    await ignoreNotFound(() => virsh(["vol-delete", "--pool", pool, consoleLogName(domain)]));
}

/** The path of a domain's first file disk (`domblklist --details`), or undefined when it has none or is gone. */
export async function firstDiskPath(virsh: Virsh, domain: string): Promise<string | undefined> {
    let out: string;
    try {
        out = await virsh(["domblklist", domain, "--details"]);
    } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
    }
    for (const line of out.split("\n")) {
        const m = /^\s*file\s+disk\s+\S+\s+(\/\S.*?)\s*$/.exec(line);
        if (m) return m[1];
    }
    return undefined;
}
