/**
 * The passwd file squid's `basic_ncsa_auth` helper reads: `user:hash` lines, never a clear password.
 *
 * The hash is Apache's MD5-crypt (`$apr1$`), which basic_ncsa_auth checks itself (no libc support
 * needed, so any squid build accepts it). MD5-crypt is not a strong password hash; it is enough here:
 * the file lives only on the member, and what it protects is a proxy behind a source-range firewall.
 * Use a long random password (docs/decisions/0037-credentials-output.md).
 *
 * The salt is derived from the password and a context string (stack/pool), so the same credentials
 * always give the same file: a member's config (and so its cloud-init or pod template) does not change
 * on every `up`, which would replace or roll it.
 */
import { createHash, createHmac } from "node:crypto";
import { clearSecret, type SecretString } from "../../src/model/fields";

const ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `n` characters of crypt's base64 from the low bits of `v`, least significant first. */
function to64(v: number, n: number): string {
    let out = "";
    for (let i = 0; i < n; i++, v >>>= 6) out += ITOA64[v & 0x3f];
    return out;
}

/** Apache's `$apr1$` MD5-crypt of `password` with `salt` (at most 8 characters of ITOA64). */
export function apr1(password: string, salt: string): string {
    if (!/^[./0-9A-Za-z]{1,8}$/.test(salt)) throw new Error("apr1 salt must be 1-8 characters of [./0-9A-Za-z]");
    const magic = "$apr1$";
    const pw = Buffer.from(password, "utf8");
    const md5 = (...parts: (Buffer | string)[]) => {
        const h = createHash("md5");
        for (const p of parts) h.update(p);
        return h.digest();
    };
    let alt = md5(pw, salt, pw);
    const ctx = createHash("md5").update(pw).update(magic).update(salt);
    for (let left = pw.length; left > 0; left -= 16) ctx.update(alt.subarray(0, Math.min(left, 16)));
    // A historic quirk of md5crypt, kept by every implementation: a zero byte or the first password byte per bit of the length.
    for (let i = pw.length; i; i >>= 1) ctx.update(i & 1 ? Buffer.alloc(1) : pw.subarray(0, 1));
    let fin = ctx.digest();
    for (let i = 0; i < 1000; i++) {
        const parts: Buffer[] = [i & 1 ? pw : fin];
        if (i % 3) parts.push(Buffer.from(salt));
        if (i % 7) parts.push(pw);
        parts.push(i & 1 ? fin : pw);
        fin = md5(...parts);
    }
    alt = fin;
    const enc =
        to64((alt[0] << 16) | (alt[6] << 8) | alt[12], 4) +
        to64((alt[1] << 16) | (alt[7] << 8) | alt[13], 4) +
        to64((alt[2] << 16) | (alt[8] << 8) | alt[14], 4) +
        to64((alt[3] << 16) | (alt[9] << 8) | alt[15], 4) +
        to64((alt[4] << 16) | (alt[10] << 8) | alt[5], 4) +
        to64(alt[11], 2);
    return `${magic}${salt}$${enc}`;
}

/** A salt for `password` in `context`: stable for the same inputs, different across pools and stacks. */
export function derivedSalt(password: string, context: string): string {
    const mac = createHmac("sha256", password).update(`egress squid passwd\0${context}`).digest();
    return to64(mac.readUIntBE(0, 6), 8);
}

/** Credentials a proxy requires (the pool's `auth`). */
export interface ProxyCredentials {
    username: string;
    password: string;
}

/** The passwd file's content for one user: `user:$apr1$...` and a newline. */
export function squidPasswdFile(auth: ProxyCredentials, context: string): string {
    return `${auth.username}:${apr1(auth.password, derivedSalt(auth.password, context))}\n`;
}

/**
 * The passwd file for a member's pool credentials, or undefined when the pool has none. The password
 * arrives decrypted in the program (pulumi.Config); anything still encrypted is refused.
 */
export function memberPasswd(
    auth: { username: string; password: SecretString } | undefined,
    context: { stack: string },
    pool: string,
): string | undefined {
    if (!auth) return undefined;
    return squidPasswdFile(
        { username: auth.username, password: clearSecret(auth.password, "auth.password") },
        `${context.stack}/${pool}`,
    );
}
