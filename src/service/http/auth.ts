import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { RequestHandler } from "express";
import { z } from "zod";
import { HttpError } from "./errors";
import { secretQueryParameter } from "../../log/redact";

export const SCOPES = ["discover", "lease", "scale", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** A token as stored: only its SHA-256, never the token itself. */
const storedTokenSchema = z.strictObject({
    name: z.string().min(1),
    sha256: z.string().regex(/^[a-f0-9]{64}$/, { message: "must be the hex SHA-256 of the token" }),
    scopes: z.array(z.enum(SCOPES)).min(1),
    /** Most requests this token may have in flight through the gateway at once (unset: no limit beyond the pool's members). */
    gatewayConcurrency: z.number().int().min(1).optional(),
});
const tokensFileSchema = z.strictObject({ tokens: z.array(storedTokenSchema) });
export type StoredToken = z.infer<typeof storedTokenSchema>;

export function sha256(s: string): Buffer {
    return crypto.createHash("sha256").update(s, "utf8").digest();
}

/** Reads a tokens file (`{tokens: [{name, sha256, scopes}]}`); errors name the file and the field. */
export function loadTokens(file: string): StoredToken[] {
    const parsed = tokensFileSchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
    if (!parsed.success)
        throw new Error(
            `invalid tokens file ${file}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        );
    return parsed.data.tokens;
}

/**
 * Tokens from `EGRESS_TOKENS` (`name:scope+scope:token,...`), hashed on read so the plain value is not
 * kept in memory longer than this call.
 */
export function tokensFromEnv(value: string | undefined): StoredToken[] {
    if (!value) return [];
    return value
        .split(",")
        .filter(Boolean)
        .map((entry, i) => {
            const [name, scopes, ...rest] = entry.split(":");
            const token = rest.join(":");
            const parsed = storedTokenSchema.safeParse({
                name,
                sha256: token ? sha256(token).toString("hex") : "",
                scopes: (scopes ?? "").split("+"),
            });
            if (!parsed.success || token.length < 16)
                throw new Error(
                    `EGRESS_TOKENS entry ${i + 1}: expected name:scope+scope:token with a token of 16+ characters and scopes from ${SCOPES.join(", ")}`,
                );
            return parsed.data;
        });
}

/**
 * For the dev stack: creates a tokens file with one all-scopes token on first start and returns the
 * plain token (to print once); returns undefined when the file exists already.
 */
export function ensureDevToken(file: string): string | undefined {
    if (fs.existsSync(file)) return undefined;
    const token = `egr_${crypto.randomBytes(24).toString("base64url")}`;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
        file,
        JSON.stringify(
            { tokens: [{ name: "dev", sha256: sha256(token).toString("hex"), scopes: [...SCOPES] }] },
            null,
            2,
        ) + "\n",
        { mode: 0o600 },
    );
    return token;
}

/** What `authenticate` leaves on a request it admitted. */
export interface AuthenticatedRequest {
    tokenName?: string;
    tokenScopes?: Scope[];
}

/**
 * Finds the stored token a presented one matches. Compares the presented token's hash with every
 * stored hash using timingSafeEqual and without an early exit, so timing says nothing about which (if
 * any) matched. Shared by the bearer check below and the gateway's proxy credentials.
 */
export function tokenMatcher(tokens: StoredToken[]): (presented: string) => StoredToken | undefined {
    const hashes = tokens.map((t) => ({ token: t, digest: Buffer.from(t.sha256, "hex") }));
    return (presented) => {
        const digest = sha256(presented);
        let match: StoredToken | undefined;
        for (const t of hashes) if (crypto.timingSafeEqual(digest, t.digest)) match = t.token;
        return match;
    };
}

/** Whether a token may use routes of `scope` (`admin` implies every scope). */
export function hasScope(token: StoredToken, scope: Scope): boolean {
    return token.scopes.includes(scope) || token.scopes.includes("admin");
}

/**
 * Bearer-token check (constant time: tokenMatcher). `admin` implies every scope; no `scope` admits any
 * valid token (GET /v1/whoami). The token's name and scopes are left on the request for handlers.
 */
export function authenticate(tokens: StoredToken[]): (scope?: Scope) => RequestHandler {
    const find = tokenMatcher(tokens);
    return (scope) => (req, _res, next) => {
        const header = req.headers.authorization ?? "";
        const m = /^Bearer\s+(\S+)$/i.exec(header);
        if (!m)
            return next(
                new HttpError(
                    "unauthenticated",
                    "missing bearer token: send `Authorization: Bearer <token>`",
                    undefined,
                    { "WWW-Authenticate": "Bearer" },
                ),
            );
        const match = find(m[1]);
        if (!match)
            return next(
                new HttpError("unauthenticated", "invalid bearer token", undefined, {
                    "WWW-Authenticate": 'Bearer error="invalid_token"',
                }),
            );
        if (scope && !hasScope(match, scope))
            return next(new HttpError("forbidden", `token "${match.name}" lacks the \`${scope}\` scope`));
        (req as AuthenticatedRequest).tokenName = match.name;
        (req as AuthenticatedRequest).tokenScopes = match.scopes;
        next();
    };
}

/**
 * Credentials are never accepted in the URL (URLs end up in proxy, server and browser logs): a request
 * with a query parameter named like one (token, access_token, api_key, key, password, secret...) is
 * answered 400 token_in_url before anything else looks at it, and its value is never used. Mounted
 * first on the Express app; the lease fast path only takes URLs without a query, so such requests
 * always come here.
 */
export const rejectCredentialsInUrl: RequestHandler = (req, _res, next) => {
    const name = req.url.includes("?") ? secretQueryParameter(req.url) : undefined;
    if (name === undefined) return next();
    next(
        new HttpError(
            "token_in_url",
            `credentials are not accepted in the URL (query parameter \`${name}\`): send \`Authorization: Bearer <token>\` instead. The value was not used; if it is a real token, it may now be in logs along the way, so replace it`,
        ),
    );
};
