/**
 * A minimal Kubernetes REST client (GET, DELETE, server-side apply) for the health checker, `egress gc` and
 * the member provider (member-provider.ts). Uses node's
 * http/https so the cluster CA and client certificates from the kubeconfig apply; no client library.
 */
import * as http from "node:http";
import * as https from "node:https";
import type { KubernetesProviderConfig } from "./config";
import {
    DEFAULT_TIMEOUT_MS,
    errorText,
    Query,
    queryString,
    RestApiError,
    RestClientOptions,
    retryCall,
} from "../shared/rest";
import { mentionsQuota } from "../shared/errors";
import type { RetrySchedule } from "../shared/retry";
import { ClusterAccess, KubeconfigOptions, loadClusterAccess } from "./kubeconfig";
import { type CatalogueEntry, EXIT } from "../../src/model/error-catalogue";

/** `endpoint` overrides the cluster's server URL. */
export interface KubeClientOptions extends Omit<KubeconfigOptions, "kubeconfigPath" | "context">, RestClientOptions {}

/** A failed call to the API server; `reason` is the Status object's. */
export class KubeApiError extends RestApiError {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    override get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "KubeApiError" };
    }
    override name = "KubeApiError";
}

/**
 * 403 `exceeded quota` (a ResourceQuota) → `quota`, 401 → `credentials`, other 403 → `rbac`, 404 →
 * `not-found`, anything else (429, 5xx, timeouts, refused) → `api`.
 */
function kubeStage(status: number, message?: string): string {
    if (status === 403 && mentionsQuota(message)) return "quota";
    return status === 401 ? "credentials" : status === 403 ? "rbac" : status === 404 ? "not-found" : "api";
}

/** `k=v,k2=v2` for a label selector. */
export function labelSelector(labels: Record<string, string>): string {
    return Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
}

/** A request's body and its media type. */
interface RequestBody {
    contentType: string;
    text: string;
}

export class KubeClient {
    readonly server: string;
    private readonly timeoutMs: number;
    private readonly retry?: RetrySchedule;
    private credentialsPromise?: ReturnType<ClusterAccess["credentials"]>;

    constructor(
        private readonly access: ClusterAccess,
        opts: RestClientOptions = {},
    ) {
        this.server = (opts.endpoint ?? access.server).replace(/\/$/, "");
        this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
        this.retry = opts.retry;
    }

    /** Builds a client for a provider entry. Throws KubeconfigError (naming the entry field) when the kubeconfig is unusable. */
    static forEntry(
        entry: Pick<KubernetesProviderConfig, "kubeconfigPath" | "context">,
        opts: KubeClientOptions = {},
    ): KubeClient {
        const access = loadClusterAccess({
            kubeconfigPath: entry.kubeconfigPath,
            context: entry.context,
            env: opts.env,
            homeDir: opts.homeDir,
        });
        return new KubeClient(access, opts);
    }

    get context(): string {
        return this.access.context;
    }

    async get<T = any>(path: string, query: Query = {}, signal?: AbortSignal): Promise<T> {
        return this.request<T>("GET", path, query, signal);
    }

    /** DELETE; resolves `false` when the object was already gone (404). Background propagation removes owned pods. */
    async delete(path: string, signal?: AbortSignal): Promise<boolean> {
        try {
            await this.request("DELETE", path, { propagationPolicy: "Background" }, signal);
            return true;
        } catch (e) {
            if (e instanceof KubeApiError && e.status === 404) return false;
            throw e;
        }
    }

    /**
     * Server-side apply (`PATCH` as application/apply-patch+yaml, field manager `egress`, forced): creates
     * `object` at `path` or brings the fields egress sets to it, leaving what others manage alone. The same
     * call whether or not an earlier attempt got through, so a retried create makes no second object.
     */
    async apply<T = any>(path: string, object: object, signal?: AbortSignal): Promise<T> {
        return this.request<T>("PATCH", path, { fieldManager: "egress", force: "true" }, signal, {
            contentType: "application/apply-patch+yaml",
            text: JSON.stringify(object), // JSON is YAML
        });
    }

    /** A JSON merge patch (RFC 7386) of `path`: the given fields only. */
    async mergePatch<T = any>(path: string, patch: object, signal?: AbortSignal): Promise<T> {
        return this.request<T>("PATCH", path, {}, signal, {
            contentType: "application/merge-patch+json",
            text: JSON.stringify(patch),
        });
    }

    /**
     * The user's credentials, resolved once per client (an exec plugin runs, a token file is read, once): a
     * client lives one check round or one gc run. A failure is not kept, so the next request tries again.
     */
    private credentials(): ReturnType<ClusterAccess["credentials"]> {
        if (!this.credentialsPromise) {
            this.credentialsPromise = this.access.credentials();
            this.credentialsPromise.catch(() => (this.credentialsPromise = undefined));
        }
        return this.credentialsPromise;
    }

    /** One API call; transient failures (no answer, 429, 5xx) are tried again under `opts.retry`. */
    private async request<T>(
        method: string,
        path: string,
        query: Query,
        signal?: AbortSignal,
        body?: RequestBody,
    ): Promise<T> {
        const creds = await this.credentials();
        return retryCall(() => this.requestOnce<T>(creds, method, path, query, signal, body), this.retry, signal);
    }

    private async requestOnce<T>(
        creds: Awaited<ReturnType<ClusterAccess["credentials"]>>,
        method: string,
        path: string,
        query: Query,
        signal?: AbortSignal,
        payload?: RequestBody,
    ): Promise<T> {
        const url = new URL(`${this.server}${path}${queryString(query)}`);
        const headers: Record<string, string> = { accept: "application/json" };
        if (creds.token) headers.authorization = `Bearer ${creds.token}`;
        else if (creds.basic) headers.authorization = `Basic ${creds.basic}`;
        if (payload) headers["content-type"] = payload.contentType;
        const lib = url.protocol === "https:" ? https : http;
        const options: https.RequestOptions = {
            method,
            headers,
            ca: this.access.ca,
            cert: creds.cert,
            key: creds.key,
            rejectUnauthorized: !this.access.insecureSkipTlsVerify,
            servername: this.access.tlsServerName,
            signal,
        };
        const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
            const req = lib.request(url, options, (res) => {
                const chunks: Buffer[] = [];
                res.on("data", (c) => chunks.push(c));
                res.on("end", () =>
                    resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
                );
                res.on("error", reject);
            });
            // One deadline for the whole exchange, headers and body.
            const timer = setTimeout(
                () =>
                    req.destroy(
                        Object.assign(new Error(`timed out after ${this.timeoutMs}ms`), { name: "TimeoutError" }),
                    ),
                this.timeoutMs,
            );
            req.on("close", () => clearTimeout(timer));
            req.on("error", (e) => {
                clearTimeout(timer);
                reject(e);
            });
            req.end(payload?.text);
        }).catch((e) => {
            throw new KubeApiError(`${method} ${path}: ${errorText(e, this.timeoutMs)}`, 0, "api");
        });
        let body: any;
        try {
            body = text ? JSON.parse(text) : {};
        } catch {
            body = undefined;
        }
        if (status < 200 || status >= 300) {
            // Errors come as a Status object: {kind: "Status", reason, message, code}.
            const msg = body?.message ?? (text.slice(0, 200) || `HTTP ${status}`);
            throw new KubeApiError(
                `${method} ${path}: HTTP ${status}: ${msg}`,
                status,
                kubeStage(status, msg),
                body?.reason,
            );
        }
        if (body === undefined)
            throw new KubeApiError(
                `${method} ${path}: the server answered with something other than JSON`,
                status,
                "api",
            );
        return body as T;
    }
}
