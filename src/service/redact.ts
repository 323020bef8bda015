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
    "token", "password", "passwd", "passphrase", "secret", "privatekey", "apikey", "accesskey", "secretkey",
    "credential", "credentials", "authorization", "cookie", "cloudinit", "userdata",
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
    return url.slice(q + 1).split("&").filter(Boolean).map((part) => {
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
    const parts = queryParts(url).map(({ name, part }) => (isSecretQueryName(name) ? `${part.split("=")[0]}=${REDACTED}` : part));
    return `${url.slice(0, q)}?${parts.join("&")}`;
}
