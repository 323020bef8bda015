import * as os from "node:os";
import * as path from "node:path";
import { z } from "zod";

/**
 * Naming rules shared by every config section.
 *
 * Provider and pool names become Pulumi resource names, Kubernetes object names and GCE labels, so they
 * follow DNS-1123 labels. KVM host names and image keys end up in file names and volume IDs, so they are
 * plain identifiers: no dots, no slashes, nothing a shell or a path would read specially.
 */
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

export const dnsLabel = () =>
    z.string().regex(DNS1123_LABEL, {
        message:
            "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
    });

export const identifier = () =>
    z.string().regex(IDENTIFIER, {
        message:
            "must be an identifier: letters, digits, '_' and '-', starting with a letter or digit, at most 63 characters",
    });

export const port = () =>
    z
        .number()
        .int({ message: "must be an integer port" })
        .min(1, { message: "must be a port in 1..65535" })
        .max(65535, { message: "must be a port in 1..65535" });

/**
 * A value that may be given in clear or as a Pulumi secret. Read straight from the stack file a secret
 * appears as `{secure: "<ciphertext>"}`; read through `pulumi.Config` it arrives decrypted as a string.
 */
export const secretString = () => z.union([z.string().min(1), z.strictObject({ secure: z.string().min(1) })]);
export type SecretString = z.infer<ReturnType<typeof secretString>>;

/**
 * A path on the machine running egress; a leading `~` or `~/` is the user's home directory, as in a
 * shell (ssh settings are written that way). `~user` is refused: Node cannot look up other users' homes.
 */
export const localPath = () =>
    z
        .string()
        .min(1)
        .superRefine((v, ctx) => {
            if (/^~[^/]/.test(v))
                ctx.addIssue({
                    code: "custom",
                    message: "only `~` and `~/...` are expanded (to this user's home); write the full path",
                });
        })
        .transform(expandHome);

export function expandHome(p: string): string {
    if (p === "~") return os.homedir();
    return p.startsWith("~/") ? path.join(os.homedir(), p.slice(2)) : p;
}

/** Proxy usernames: unreserved URL characters only, so `user:pass@` needs no escaping and squid's passwd file no quoting. */
export const PROXY_USERNAME = /^[A-Za-z0-9._~-]{1,64}$/;

/**
 * A proxy password, in clear or as a Pulumi secret. In clear (as the program reads it, decrypted) it must
 * be 12-256 printable characters: squid's basic auth helper reads one line per request, so no control
 * characters. Messages never quote it (the path names `password`, which errors.ts redacts).
 */
export const proxyPasswordSchema = () =>
    secretString().superRefine((v, ctx) => {
        if (typeof v !== "string") return;
        if (v.length < 12)
            ctx.addIssue({
                code: "custom",
                message: "must be at least 12 characters (use a random one: `openssl rand -base64 24`)",
            });
        if (v.length > 256) ctx.addIssue({ code: "custom", message: "must be at most 256 characters" });
        // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
        if (/[\x00-\x1f\x7f]/.test(v))
            ctx.addIssue({ code: "custom", message: "must not contain control characters (newlines, tabs)" });
    });

/** The clear text of a secret the program reads decrypted; `what` names it in the error. */
export function clearSecret(v: SecretString, what: string): string {
    if (typeof v !== "string")
        throw new Error(
            `\`${what}\` is still encrypted: read the config through Pulumi (pulumi.Config) so secrets are decrypted`,
        );
    return v;
}
