/**
 * A minimal Compute Engine REST v1 client (get, list, insert, delete, wait on operations) for the member
 * resource, the health checker, the gone check and `egress gc`.
 * Plain `fetch`; the endpoint is configurable so tests talk to a local server with the same JSON.
 */
import {
    DEFAULT_TIMEOUT_MS,
    errorText,
    Query,
    queryString,
    RestApiError,
    RestClientOptions,
    retryCall,
} from "../shared/rest";
import { classifyHttp, mentionsQuota } from "../shared/errors";
import { GcpAuthOptions, GcpCredentialsError, resolveCredentials } from "./auth";
import { type CatalogueEntry, EXIT } from "../../src/model/error-catalogue";

const COMPUTE_ENDPOINT = "https://compute.googleapis.com";
/** How long an operation may take before its caller gives up on it (an instance delete takes 30–90 s). */
const OPERATION_DEADLINE_MS = 10 * 60_000;
/** One `operations/…/wait` call: GCE answers it when the operation is done or after about 2 minutes. */
const WAIT_CALL_MS = 130_000;
/** Operation errors that another try may not meet: a zone out of the machine type (spot stockouts), a resource still settling. */
const TRANSIENT_OPERATION_CODES = [
    "ZONE_RESOURCE_POOL_EXHAUSTED",
    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
    "RESOURCE_NOT_READY",
];

/**
 * $GOOGLE_COMPUTE_CUSTOM_ENDPOINT, the Compute endpoint the Pulumi gcp provider reads too (as
 * `https://host/compute/v1/`): one setting moves both, e.g. to a private endpoint or a test's stand-in.
 */
function customEndpoint(env: Record<string, string | undefined>): string | undefined {
    const v = env.GOOGLE_COMPUTE_CUSTOM_ENDPOINT;
    return v ? v.replace(/\/?(compute\/(v1|beta)\/?)?$/, "") : undefined;
}

/** `endpoint` is the base URL of the Compute API; @default "https://compute.googleapis.com" */
export interface GcpClientOptions extends GcpAuthOptions, RestClientOptions {
    /**
     * How long one `operations/…/wait` call may take before it is asked again (GCE answers one when the
     * operation is done or after about 2 minutes; tests shorten it). @default 130000
     */
    waitCallMs?: number;
}

/** A failed Compute API call; `reason` is Google's. */
export class GcpApiError extends RestApiError {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    override get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "GcpApiError" };
    }
    override name = "GcpApiError";
}

/**
 * Maps a Google error to an operator-facing stage: `quota` (QUOTA_EXCEEDED, whatever the status),
 * `credentials` (401), `api-disabled` (Compute API off), `permissions` (other 403), `not-found` (404),
 * `rate-limit` (429), `api` (5xx, timeouts, network).
 */
function gcpStage(status: number, reason?: string, text?: string): string {
    if (mentionsQuota(reason) || mentionsQuota(text)) return "quota";
    if (status === 401) return "credentials";
    if (status === 403 && (reason === "accessNotConfigured" || reason === "SERVICE_DISABLED")) return "api-disabled";
    if (status === 403) return "permissions";
    if (status === 404) return "not-found";
    if (status === 429) return "rate-limit";
    return "api";
}

/** Label filter in the Compute list syntax: `(labels.k = "v") AND (labels.k2 = "v2")`. */
export function labelFilter(labels: Record<string, string>): string {
    return Object.entries(labels)
        .map(([k, v]) => `(labels.${k} = "${v.replace(/"/g, "")}")`)
        .join(" AND ");
}

export class GcpComputeClient {
    private readonly base: string;
    private readonly timeoutMs: number;
    private readonly opts: GcpClientOptions;
    private tokenPromise?: Promise<string>;

    constructor(
        readonly project: string,
        opts: GcpClientOptions = {},
    ) {
        this.opts = { ...opts, env: opts.env ?? { ...process.env } };
        const endpoint = opts.endpoint ?? customEndpoint(this.opts.env!) ?? COMPUTE_ENDPOINT;
        this.base = `${endpoint.replace(/\/$/, "")}/compute/v1/projects/${encodeURIComponent(project)}`;
        this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    }

    /** An access token, fetched once per client (tokens live an hour; a client lives one command). */
    token(signal?: AbortSignal): Promise<string> {
        if (!this.tokenPromise) {
            this.tokenPromise = (async () => resolveCredentials(this.opts).token(this.signal(signal)))();
            this.tokenPromise.catch(() => (this.tokenPromise = undefined));
        }
        return this.tokenPromise.catch((e) => {
            if (e instanceof GcpCredentialsError) throw e;
            throw new GcpCredentialsError(`cannot get a GCP access token: ${errorText(e, this.timeoutMs)}`);
        });
    }

    /** GET `<project>/<path>`; one page. */
    async get<T = any>(path: string, query: Query = {}, signal?: AbortSignal): Promise<T> {
        return this.call<T>("GET", path, query, signal);
    }

    /** Every item of a list endpoint, following `nextPageToken`. Aggregated lists return `{scope: items[]}`. */
    async listAll(
        path: string,
        query: Query,
        itemsKey?: string,
        signal?: AbortSignal,
    ): Promise<{ scope: string; item: any }[]> {
        const out: { scope: string; item: any }[] = [];
        let pageToken: string | undefined;
        do {
            const page: any = await this.get(path, { ...query, pageToken }, signal);
            if (itemsKey) {
                for (const [scope, v] of Object.entries<any>(page.items ?? {}))
                    for (const item of v?.[itemsKey] ?? []) out.push({ scope, item });
            } else for (const item of page.items ?? []) out.push({ scope: "global", item });
            pageToken = page.nextPageToken;
        } while (pageToken);
        return out;
    }

    /** DELETE and wait for the operation. Resolves `false` when the thing was already gone (404). */
    async delete(path: string, signal?: AbortSignal): Promise<boolean> {
        let op: any;
        try {
            op = await this.call("DELETE", path, {}, signal);
        } catch (e) {
            if (e instanceof GcpApiError && e.status === 404) return false;
            throw e;
        }
        await this.settle(op, `deleting ${path}`, path, signal);
        return true;
    }

    /**
     * POST `body` to `<project>/<path>` and wait for the operation it starts (an insert, a setLabels).
     * Not retried: a POST that reached GCE but whose answer was lost would run twice (the caller knows
     * whether its request is safe to repeat).
     */
    async post(path: string, body: unknown, query: Query = {}, signal?: AbortSignal): Promise<void> {
        const token = await this.token(signal);
        const op = await this.callOnce<any>(token, "POST", path, query, signal, body);
        await this.settle(op, `POST ${path}`, path, signal);
    }

    /** Waits for `op` (where the resource at `path` lives: zones/x, regions/x or global) and throws its error. */
    private async settle(op: any, what: string, path: string, signal?: AbortSignal): Promise<void> {
        const scope = /^(zones\/[^/]+|regions\/[^/]+|global)\//.exec(path)?.[1] ?? "global";
        const deadline = Date.now() + OPERATION_DEADLINE_MS;
        while (op?.status !== "DONE") {
            if (Date.now() > deadline)
                throw new GcpApiError(
                    `${what}: operation ${op.name} not done after 10 min`,
                    0,
                    "api",
                    undefined,
                    "transient",
                );
            const waitPath = `${scope}/operations/${op.name}/wait`;
            try {
                op = await this.callOnce(
                    await this.token(signal),
                    "POST",
                    waitPath,
                    {},
                    signal,
                    undefined,
                    this.opts.waitCallMs ?? WAIT_CALL_MS,
                );
            } catch (e) {
                // A wait that timed out or failed on the way is not the operation failing: ask again.
                if (signal?.aborted || !(e instanceof GcpApiError) || e.errorClass !== "transient") throw e;
                await new Promise((r) => setTimeout(r, 1000));
            }
        }
        if (op.error?.errors?.length) {
            const first = op.error.errors[0];
            // A failed operation is not a failed call: its code (QUOTA_EXCEEDED...) decides the class, not status 0.
            const quota = mentionsQuota(first.code) || mentionsQuota(first.message);
            const stockout = TRANSIENT_OPERATION_CODES.includes(first.code);
            throw new GcpApiError(
                `${what} failed: ${first.message ?? first.code}`,
                0,
                quota ? "quota" : "api",
                first.code,
                quota ? "quota" : stockout ? "transient" : "permanent",
            );
        }
    }

    private signal(outer?: AbortSignal, timeoutMs = this.timeoutMs): AbortSignal {
        const t = AbortSignal.timeout(timeoutMs);
        return outer ? AbortSignal.any([outer, t]) : t;
    }

    /** One API call; transient failures (no answer, 429, 5xx) are tried again under `opts.retry`. */
    private async call<T>(method: string, path: string, query: Query, signal?: AbortSignal): Promise<T> {
        const token = await this.token(signal);
        return retryCall(() => this.callOnce<T>(token, method, path, query, signal), this.opts.retry, signal);
    }

    private async callOnce<T>(
        token: string,
        method: string,
        path: string,
        query: Query,
        signal?: AbortSignal,
        body?: unknown,
        timeoutMs = this.timeoutMs,
    ): Promise<T> {
        const url = `${this.base}/${path}${queryString(query)}`;
        let res: Response;
        let text: string;
        try {
            res = await fetch(url, {
                method,
                headers: {
                    authorization: `Bearer ${token}`,
                    accept: "application/json",
                    ...(body === undefined ? {} : { "content-type": "application/json" }),
                },
                ...(body === undefined ? {} : { body: JSON.stringify(body) }),
                signal: this.signal(signal, timeoutMs),
            });
            text = await res.text();
        } catch (e) {
            throw new GcpApiError(`${method} ${path}: ${errorText(e, timeoutMs)}`, 0, "api");
        }
        let answer: any;
        try {
            answer = text ? JSON.parse(text) : {};
        } catch {
            answer = {};
        }
        if (!res.ok) {
            const err = answer?.error ?? {};
            const reason = err.errors?.[0]?.reason ?? err.details?.find?.((d: any) => d?.reason)?.reason ?? err.status;
            const msg = typeof err.message === "string" ? err.message : text.slice(0, 200) || res.statusText;
            throw new GcpApiError(
                `${method} ${path}: HTTP ${res.status}: ${msg}`,
                res.status,
                gcpStage(res.status, reason, text),
                reason,
                classifyHttp(res.status, reason, text),
            );
        }
        return answer as T;
    }
}
