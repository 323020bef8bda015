/**
 * What counts as a secret by name, in log objects, headers and URLs. A name is compared with its
 * letters and digits only, lowercased, so `private_key`, `privateKey`, `Private-Key` and `token[]`
 * are the same names as `privatekey` and `token`.
 */

/**
 * A name is secret when it ends with one of these: `token`, `githubToken`, `x-auth-token`, `dbPassword`,
 * `sshPrivateKey`, `x-api-key`, `proxy-authorization`, `set-cookie`, `cloudInit`, `vmUserData`...
 * Plurals are not: `tokens` is the list of token names and scopes the service logs at start.
 */
const SECRET_SUFFIXES = [
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "privatekey",
    "apikey",
    "accesskey",
    "secretkey",
    "credential",
    "credentials",
    "authorization",
    "cookie",
    "cloudinit",
    "userdata",
];

/** Query parameter names that carry credentials in other APIs, on top of the secret names. */
const SECRET_QUERY_NAMES = new Set(["key", "auth", "jwt", "bearer", "sig", "signature"]);

const normalize = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");

/** Decisions by name, cached: log objects repeat the same few dozen keys, and this runs for each. */
const cache = new Map<string, boolean>();
const CACHE_LIMIT = 10_000;

/** True when a field, header or parameter called `name` holds a secret and must not be logged. */
export function isSecretName(name: string): boolean {
    let secret = cache.get(name);
    if (secret === undefined) {
        const n = normalize(name);
        secret = SECRET_SUFFIXES.some((s) => n.endsWith(s));
        if (cache.size < CACHE_LIMIT) cache.set(name, secret); // bounded: names can come from clients
    }
    return secret;
}

/** True when a query parameter called `name` would carry a credential in the URL. */
export function isSecretQueryName(name: string): boolean {
    return isSecretName(name) || SECRET_QUERY_NAMES.has(normalize(name));
}

/** The parameter names in `url`'s query string as sent (percent-decoded), each with its raw `name=value` part. */
function queryParts(url: string): { name: string; part: string }[] {
    const q = url.indexOf("?");
    if (q < 0) return [];
    return url
        .slice(q + 1)
        .split("&")
        .filter(Boolean)
        .map((part) => {
            const raw = part.split("=")[0].replace(/\+/g, " ");
            let name = raw;
            try {
                name = decodeURIComponent(raw);
            } catch {
                /* a malformed escape: judge the name as written */
            }
            return { name, part };
        });
}

/** The first query parameter of `url` whose name says it carries a credential, if any. */
export function secretQueryParameter(url: string): string | undefined {
    return queryParts(url).find((p) => isSecretQueryName(p.name))?.name;
}

export const REDACTED = "[redacted]";

/** `url` with the value of every credential-carrying query parameter replaced, for logs. */
export function redactUrl(url: string): string {
    const q = url.indexOf("?");
    if (q < 0) return url;
    const parts = queryParts(url).map(({ name, part }) =>
        isSecretQueryName(name) ? `${part.split("=")[0]}=${REDACTED}` : part,
    );
    return `${url.slice(0, q)}?${parts.join("&")}`;
}

/** Deeper than this, a log object is cut (pino would print it at any depth, so it cannot go unscanned). */
const MAX_DEPTH = 32;

/**
 * `value` with the value of every secret-named field replaced by "[redacted]", at any depth: in
 * objects, arrays, errors' own fields. Copy on write: when nothing is secret (nearly always) the very
 * same object comes back and nothing is allocated. Walks what JSON.stringify would write (own
 * enumerable fields; an object with toJSON, like Date or Buffer, is left as it is). A cycle becomes
 * "[Circular]" here, so the caller's object is never written past a redacted copy.
 * Strings are searched for one thing only: a URL's password (`redis://user:pass@host`, a proxy URL
 * with credentials), which is masked wherever the URL sits (maskUrlPasswords). Any other secret inside
 * a message is the message author's to keep out.
 */
export function redactDeep<T>(value: T): T {
    return walk(value, 0, []) as T;
}

/** The value a field called `key` is logged with: "[redacted]" for a secret name, else redactDeep(value). */
export function redactField(key: string, value: unknown): unknown {
    return value !== undefined && isSecretName(key) ? REDACTED : walk(value, 1, []);
}

/** `scheme://user:password@` → `scheme://user:[redacted]@`, for every URL in `s`; the same string when there is none. */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^\s:@/[\]]*):([^\s@/[\]]+)@/gi;
export function maskUrlPasswords(s: string): string {
    // The cheap test first: nearly every logged string has no "://" at all. A password already masked
    // (redactStoreUrl's "***") stays as it is.
    return s.includes("://") && s.includes("@")
        ? s.replace(URL_PASSWORD, (all, head: string, pw: string) => (pw === "***" ? all : `${head}:${REDACTED}@`))
        : s;
}

function walk(v: unknown, depth: number, ancestors: object[]): unknown {
    if (typeof v === "string") return maskUrlPasswords(v);
    if (typeof v !== "object" || v === null || typeof (v as { toJSON?: unknown }).toJSON === "function") return v;
    if (ancestors.includes(v)) return "[Circular]";
    if (depth >= MAX_DEPTH) return "[too deep to log]";
    ancestors.push(v);
    const out = Array.isArray(v)
        ? walkArray(v, depth, ancestors)
        : walkObject(v as Record<string, unknown>, depth, ancestors);
    ancestors.pop();
    return out;
}

function walkArray(a: unknown[], depth: number, ancestors: object[]): unknown[] {
    let copy: unknown[] | undefined;
    for (let i = 0; i < a.length; i++) {
        const w = walk(a[i], depth + 1, ancestors);
        if (w !== a[i]) (copy ??= a.slice())[i] = w;
    }
    return copy ?? a;
}

function walkObject(o: Record<string, unknown>, depth: number, ancestors: object[]): Record<string, unknown> {
    let copy: Record<string, unknown> | undefined;
    for (const k in o) {
        if (!Object.prototype.hasOwnProperty.call(o, k)) continue;
        const x = o[k];
        const w = x === undefined ? x : isSecretName(k) ? REDACTED : walk(x, depth + 1, ancestors);
        if (w !== x) (copy ??= { ...o })[k] = w;
    }
    return copy ?? o;
}
