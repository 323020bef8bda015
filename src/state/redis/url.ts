import { z } from "zod";
import { isSentinelUrl, parseSentinelUrl, type SentinelSpec } from "./sentinel-url";
import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

/**
 * Where the serving state lives: this process's memory (the default), or a Redis server, reached directly
 * or through the Sentinels that know which node is its primary (`sentinel`).
 */
export type StoreSpec =
    { kind: "memory" } | { kind: "redis"; url: string; tls: boolean; db: number; sentinel?: SentinelSpec };

/** The rule `--store` / `EGRESS_STORE` is checked against, quoted by every refusal. */
export const STORE_RULE =
    "`memory`, redis://[user:pass@]host:port[/db] (rediss:// for TLS; db 0 to 15), or " +
    "redis+sentinel://[user:pass@]host:port[,host:port…]/<master-name>[/db] (rediss+sentinel:// for TLS)";

/**
 * `url` with its password replaced, for messages and logs: the store URL is a secret (its password
 * reaches the whole serving state). Not a URL: returned cut to 60 characters with any `:…@` masked.
 */
export function redactStoreUrl(url: string): string {
    // Not a WHATWG URL, and longer than 60 characters with three sentinels: shown whole, everything
    // between the user's colon and the last @ masked (a password may hold an unescaped / or @).
    if (isSentinelUrl(url)) return url.replace(/^([^:]+:\/\/[^:@/]*:).*@/, "$1***@");
    try {
        const u = new URL(url);
        if (u.password) u.password = "***";
        return u.toString();
    } catch {
        return url.slice(0, 60).replace(/:[^:@/]*@/, ":***@");
    }
}

/** One issue per broken part, so the message says which part is wrong; the URL is never echoed with its password. */
const storeUrl = z
    .string()
    .trim()
    .superRefine((raw, ctx) => {
        if (raw === "memory") return;
        let u: URL;
        try {
            u = new URL(raw);
        } catch {
            return void ctx.addIssue({ code: "custom", message: "is not a URL" });
        }
        if (u.protocol !== "redis:" && u.protocol !== "rediss:")
            ctx.addIssue({
                code: "custom",
                message: `scheme ${u.protocol}// is not redis://, rediss:// or redis+sentinel://`,
            });
        if (!u.hostname) ctx.addIssue({ code: "custom", message: "has no host" });
        // A port is required: "host:port" in the rule, and a silent 6379 hides a typo'd URL.
        if (!u.port) ctx.addIssue({ code: "custom", message: "has no port" });
        if (u.pathname !== "" && u.pathname !== "/" && !/^\/([0-9]|1[0-5])$/.test(u.pathname))
            ctx.addIssue({
                code: "custom",
                message: `database ${JSON.stringify(u.pathname.slice(1))} is not a number from 0 to 15`,
            });
        if (u.search || u.hash) ctx.addIssue({ code: "custom", message: "takes no ?query or #fragment" });
    });

/**
 * Parses `--store` (or `EGRESS_STORE`): throws an Error naming `flag`, what is wrong and the rule, with
 * the value's password masked. Empty or absent → memory.
 */
export function parseStoreSpec(raw: string | undefined, flag = "--store"): StoreSpec {
    if (raw === undefined || raw.trim() === "") return { kind: "memory" };
    if (isSentinelUrl(raw)) return sentinelStoreSpec(raw.trim(), flag);
    const r = storeUrl.safeParse(raw);
    if (!r.success)
        throw new StoreSpecError(
            `${flag} ${redactStoreUrl(raw.trim())} ${r.error.issues.map((i) => i.message).join(", ")}: it must be ${STORE_RULE}`,
        );
    if (r.data === "memory") return { kind: "memory" };
    const u = new URL(r.data);
    return { kind: "redis", url: r.data, tls: u.protocol === "rediss:", db: Number(u.pathname.slice(1) || 0) };
}

function sentinelStoreSpec(raw: string, flag: string): StoreSpec {
    const r = parseSentinelUrl(raw);
    if ("issues" in r)
        throw new StoreSpecError(`${flag} ${redactStoreUrl(raw)} ${r.issues.join(", ")}: it must be ${STORE_RULE}`);
    return { kind: "redis", url: raw, tls: r.spec.tls, db: r.spec.db, sentinel: r.spec };
}

export class StoreSpecError extends Error {
    /** Its `--json` error.type is \"Error\": the class never named itself (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "Error" };
    }
}
