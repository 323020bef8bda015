import { UsageError } from "./context";
import {
    type AllowRule,
    parseAllowRule,
    parseStickyRange,
    stickyClash,
    type StickyRange,
    readTlsPair,
    type TlsFiles,
} from "../service";

/** `egress serve`'s flags that need more than a number check: each error names the flag and the rule (exit 2). */

/** `--tls-cert` and `--tls-key`: both or neither, readable, a certificate and its own key (checked now: exit 2). */
export function tlsFlags(
    certFile: string | undefined,
    keyFile: string | undefined,
    tlsPort: number,
): TlsFiles | undefined {
    if (!certFile !== !keyFile)
        throw new UsageError(
            `${certFile ? "--tls-cert needs --tls-key" : "--tls-key needs --tls-cert"}: give the certificate and its private key together (or neither)`,
        );
    if (!certFile || !keyFile) {
        if (tlsPort !== 0)
            throw new UsageError(
                "--gateway-tls-port needs --tls-cert and --tls-key: the TLS port serves that certificate",
            );
        return undefined;
    }
    const files = { certFile, keyFile };
    try {
        readTlsPair(files);
    } catch (e) {
        throw new UsageError((e as Error).message);
    }
    return files;
}

/** A port flag's value: a port number, or 0 for `off`. */
export function portFlag(flag: string, raw: string, off: string): number {
    const port = Number(raw);
    if (raw === "" || !Number.isInteger(port) || port < 0 || port > 65535)
        throw new UsageError(`${flag} must be a port number, or 0 for ${off} (got "${raw}")`);
    return port;
}

/** `--gateway-block-header name` or `name=text` (a header token name; matched case-insensitively). */
export function blockHeader(raw: string): { name: string; contains?: string } {
    const i = raw.indexOf("=");
    const name = (i < 0 ? raw : raw.slice(0, i)).trim().toLowerCase();
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name))
        throw new UsageError(`--gateway-block-header must be a header name, optionally =text (got "${raw}")`);
    const contains = i < 0 ? undefined : raw.slice(i + 1);
    if (contains === "")
        throw new UsageError(
            `--gateway-block-header "${raw}": the text after = is empty; leave out = to match the header's presence`,
        );
    return contains === undefined ? { name } : { name, contains };
}

/** A repeatable flag's values; unset, the comma-separated list in `env` (flags given replace it). */
export function listFlag(given: string[] | undefined, env: string | undefined): string[] {
    return (
        given ??
        (env ?? "")
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean)
    );
}

/**
 * `--gateway-allow` and `--gateway-sticky-ports` (gateway/doors.ts): each rule parsed, its pool one of
 * the stack's, sticky ranges clear of one another and of the other ports (`taken`: flag → port, 0 =
 * none). Token names are checked at start, against the tokens loaded then.
 */
export function doorFlags(
    allowRaw: string[],
    stickyRaw: string[],
    pools: string[],
    taken: Record<string, number>,
): { allow: AllowRule[]; stickyPorts: StickyRange[] } {
    const parsed = <T>(flag: string, raw: string, parse: (r: string) => T): T => {
        try {
            return parse(raw);
        } catch (e) {
            throw new UsageError(`${flag} ${(e as Error).message}`);
        }
    };
    const allow = allowRaw.map((r) => parsed("--gateway-allow", r, parseAllowRule));
    const stickyPorts = stickyRaw.map((r) => parsed("--gateway-sticky-ports", r, parseStickyRange));
    for (const [flag, rules] of [
        ["--gateway-allow", allow],
        ["--gateway-sticky-ports", stickyPorts],
    ] as const)
        for (const r of rules)
            if (r.pool !== undefined && !pools.includes(r.pool))
                throw new UsageError(
                    `${flag} "${r.rule}": the stack has no pool "${r.pool}" (pools: ${pools.join(", ") || "none"})`,
                );
    const clash = stickyClash(stickyPorts, taken);
    if (clash) throw new UsageError(`--gateway-sticky-ports ${clash}: each port is one door, for one flag`);
    return { allow, stickyPorts };
}
