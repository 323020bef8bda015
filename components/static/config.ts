import { z } from "zod";
import { providerCommonFields } from "../shared/config";
import { secretString } from "../../src/model/fields";
import type { ConfigProblem, PoolConfig } from "../../src/model";

/** Schemes a static proxy may have: how egress and clients talk to the proxy itself. */
const SCHEMES = ["http:", "https:"];

/** One existing proxy: a URL, or the URL with its credentials as separate fields. */
const proxySchema = z.union([
    secretString(),
    z.strictObject({
        /** `http://host:port` or `https://host:port`; credentials in it, or in `username`/`password`, not both. */
        url: secretString(),
        username: z.string().min(1).optional(),
        /** The proxy's password (prefer a Pulumi secret: `pulumi config set --secret --path ...`). */
        password: secretString().optional(),
        /** Shown as the member's zone. @default "static" */
        zone: z.string().min(1).optional(),
    }),
]);

/** A static proxy, parsed: where it answers and how to authenticate (never published). */
export interface StaticProxyTarget {
    scheme: "http" | "https";
    host: string;
    port: number;
    zone: string;
    /** Credentials, decrypted; undefined without any. Secret: never log or publish. */
    auth?: { username: string; password: string };
}

/**
 * Reads one listed proxy. Throws an Error naming what is wrong (the schema turns it into a config problem).
 * A URL or password still encrypted (`{secure: ...}`, read straight from the stack file) cannot be read:
 * undefined then, and validation happens when Pulumi decrypts the config (`up`, `egress serve`).
 */
export function parseStaticProxy(p: z.infer<typeof proxySchema>): StaticProxyTarget | undefined {
    const entry = typeof p === "object" && "url" in p ? p : { url: p };
    if (typeof entry.url !== "string") return undefined;
    let u: URL;
    try {
        u = new URL(entry.url);
    } catch {
        throw new Error("must be a URL such as http://proxy.example:3128");
    }
    if (!SCHEMES.includes(u.protocol))
        throw new Error(
            `has unsupported scheme \`${u.protocol.replace(/:$/, "")}\`: use http:// or https:// (the proxy's own scheme)`,
        );
    if ((u.pathname !== "/" && u.pathname !== "") || u.search || u.hash)
        throw new Error("must be scheme://host:port only (no path, query or fragment)");
    const inUrl = u.username || u.password;
    const fields = "username" in entry && (entry.username !== undefined || entry.password !== undefined);
    if (inUrl && fields) throw new Error("has credentials in the URL and in `username`/`password`: use one");
    const username = inUrl ? decodeURIComponent(u.username) : "username" in entry ? entry.username : undefined;
    const password = inUrl ? decodeURIComponent(u.password) : "password" in entry ? entry.password : undefined;
    if (password !== undefined && typeof password !== "string") return undefined;
    if ((username === undefined) !== (password === undefined) && !(username && password === ""))
        throw new Error("needs both a username and a password, or neither");
    const scheme = u.protocol === "https:" ? "https" : "http";
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const port = u.port ? Number(u.port) : scheme === "https" ? 443 : 80;
    const zone = "zone" in entry && entry.zone ? entry.zone : "static";
    return {
        scheme,
        host,
        port,
        zone,
        ...(username !== undefined ? { auth: { username, password: password ?? "" } } : {}),
    };
}

/**
 * `type: static` — proxies that already exist, listed by URL. egress creates nothing: it health-checks,
 * leases and serves them. Member `i` of the pool is `proxies[i]`; the pool's `replicas` is the list's length.
 */
export const staticProviderSchema = z
    .strictObject({
        type: z.literal("static"),
        ...providerCommonFields,
        /** The proxies, each once. */
        proxies: z.array(proxySchema).min(1, { message: "must list at least one proxy" }),
    })
    .superRefine((v, ctx) => {
        const seen = new Map<string, number>();
        v.proxies.forEach((p, i) => {
            let t: StaticProxyTarget | undefined;
            try {
                t = parseStaticProxy(p);
            } catch (e) {
                ctx.addIssue({
                    code: "custom",
                    path: ["proxies", i, ...(typeof p === "object" && "url" in p ? ["url"] : [])],
                    message: (e as Error).message,
                });
                return;
            }
            if (!t) return;
            const key = `${t.scheme}://${t.host.toLowerCase()}:${t.port}`;
            const first = seen.get(key);
            if (first !== undefined)
                ctx.addIssue({
                    code: "custom",
                    path: ["proxies", i],
                    message: `duplicates proxies[${first}] (${key}): list each proxy once`,
                });
            else seen.set(key, i);
        });
    });

export type StaticProviderConfig = z.infer<typeof staticProviderSchema>;

/**
 * A pool on a static entry: members follow the list, so per-member overrides, placement and cloud-init
 * mean nothing; and one entry serves one pool (a proxy in two pools could be in two leases at once).
 */
export function checkStaticPool(
    pool: PoolConfig,
    at: (...p: (string | number)[]) => string,
    users: readonly PoolConfig[],
): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    const unused = (field: string, value: unknown) =>
        out.push({ path: at(field), rule: "is not used by static providers (members are the listed proxies)", value });
    if (Object.keys(pool.placement).length) unused("placement", pool.placement);
    if (pool.cloudInit) unused("cloudInit", pool.cloudInit.file ?? "(inline)");
    if (pool.members.length)
        unused(
            "members",
            pool.members.map((m) => m.index),
        );
    if (users[0] && users[0].name !== pool.name)
        out.push({
            path: at("provider"),
            rule: `already serves pool "${users[0].name}": a static provider serves one pool (a proxy must never be in two leases at once)`,
            value: pool.provider,
        });
    return out;
}
