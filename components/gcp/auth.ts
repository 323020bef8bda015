/**
 * Google OAuth access tokens for the health checker and `egress gc`, without a client library. Sources,
 * first match wins (the same ones the Pulumi gcp provider reads, minus the GCE metadata server):
 *   1. `accessToken` option, then $GOOGLE_OAUTH_ACCESS_TOKEN (e.g. `gcloud auth print-access-token`);
 *   2. a credentials file: `credentialsFile` option, $GOOGLE_APPLICATION_CREDENTIALS, $GOOGLE_CREDENTIALS
 *      (a path or the JSON itself), then gcloud's ADC file (`gcloud auth application-default login`).
 *      `service_account` keys are exchanged with a signed JWT, `authorized_user` with their refresh token.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type CatalogueEntry, EXIT } from "../../src/model/error-catalogue";

const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
const DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token";

export interface GcpAuthOptions {
    /** A ready access token; skips every other source. */
    accessToken?: string;
    /** Path to a service-account key or authorized-user JSON file. */
    credentialsFile?: string;
    /** Environment to read; @default process.env (read once, when the client is built). */
    env?: Record<string, string | undefined>;
    /** Home directory holding `.config/gcloud`; @default os.homedir() */
    homeDir?: string;
}

/** No usable credentials, or the token endpoint refused them. Its message says what to do. */
export class GcpCredentialsError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "GcpCredentialsError" };
    }
    constructor(message: string) {
        super(message);
        this.name = "GcpCredentialsError";
    }
}

interface CredentialsJson {
    type?: string;
    client_email?: string;
    private_key?: string;
    client_id?: string;
    client_secret?: string;
    refresh_token?: string;
    token_uri?: string;
}

/** Where credentials come from, resolved once; `token()` exchanges them (callers cache). */
export function resolveCredentials(opts: GcpAuthOptions = {}): {
    source: string;
    token: (signal?: AbortSignal) => Promise<string>;
} {
    const env = opts.env ?? process.env;
    const direct = opts.accessToken ?? env.GOOGLE_OAUTH_ACCESS_TOKEN;
    if (direct)
        return {
            source: opts.accessToken ? "accessToken option" : "$GOOGLE_OAUTH_ACCESS_TOKEN",
            token: async () => direct,
        };
    const adc = path.join(opts.homeDir ?? os.homedir(), ".config", "gcloud", "application_default_credentials.json");
    const candidates: [string, string | undefined][] = [
        ["credentialsFile option", opts.credentialsFile],
        ["$GOOGLE_APPLICATION_CREDENTIALS", env.GOOGLE_APPLICATION_CREDENTIALS],
        ["$GOOGLE_CREDENTIALS", env.GOOGLE_CREDENTIALS],
        [adc, fs.existsSync(adc) ? adc : undefined],
    ];
    const found = candidates.find(([, v]) => v);
    if (!found)
        throw new GcpCredentialsError(
            "no GCP credentials found: run `gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or set GOOGLE_OAUTH_ACCESS_TOKEN",
        );
    const [source, value] = found as [string, string];
    let creds: CredentialsJson;
    try {
        creds = JSON.parse(value.trimStart().startsWith("{") ? value : fs.readFileSync(value, "utf8"));
    } catch (e) {
        throw new GcpCredentialsError(`cannot read GCP credentials from ${source}: ${(e as Error).message}`);
    }
    if (creds.type === "service_account" && creds.client_email && creds.private_key)
        return {
            source: `${source} (service account ${creds.client_email})`,
            token: (s) => serviceAccountToken(creds, s),
        };
    if (creds.type === "authorized_user" && creds.refresh_token && creds.client_id && creds.client_secret)
        return { source: `${source} (authorized user)`, token: (s) => refreshToken(creds, s) };
    throw new GcpCredentialsError(
        `GCP credentials from ${source} have type \`${creds.type ?? "unknown"}\`, which egress cannot use; use a service-account key, ADC from gcloud, or GOOGLE_OAUTH_ACCESS_TOKEN`,
    );
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** The signed JWT a service account trades for an access token (RFC 7523). */
function serviceAccountAssertion(
    creds: { client_email: string; private_key: string; token_uri?: string },
    now = Date.now(),
): string {
    const iat = Math.floor(now / 1000);
    const header = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
    const claims = b64url(
        JSON.stringify({
            iss: creds.client_email,
            scope: CLOUD_PLATFORM_SCOPE,
            aud: creds.token_uri ?? DEFAULT_TOKEN_URI,
            iat,
            exp: iat + 3600,
        }),
    );
    const signature = crypto.sign("RSA-SHA256", Buffer.from(`${header}.${claims}`), creds.private_key);
    return `${header}.${claims}.${b64url(signature)}`;
}

async function serviceAccountToken(creds: CredentialsJson, signal?: AbortSignal): Promise<string> {
    const assertion = serviceAccountAssertion(creds as Required<CredentialsJson>);
    return exchange(
        creds.token_uri ?? DEFAULT_TOKEN_URI,
        { grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion },
        signal,
    );
}

async function refreshToken(creds: CredentialsJson, signal?: AbortSignal): Promise<string> {
    const form = {
        grant_type: "refresh_token",
        client_id: creds.client_id!,
        client_secret: creds.client_secret!,
        refresh_token: creds.refresh_token!,
    };
    return exchange(creds.token_uri ?? DEFAULT_TOKEN_URI, form, signal);
}

async function exchange(uri: string, form: Record<string, string>, signal?: AbortSignal): Promise<string> {
    const res = await fetch(uri, { method: "POST", body: new URLSearchParams(form), signal });
    const body: any = await res.json().catch(() => ({}));
    if (!res.ok || typeof body.access_token !== "string")
        // OAuth errors are {error, error_description}; neither carries a secret.
        throw new GcpCredentialsError(
            `the token endpoint refused the GCP credentials (HTTP ${res.status}${body.error ? `: ${body.error}` : ""}${body.error_description ? ` — ${body.error_description}` : ""})`,
        );
    return body.access_token;
}
