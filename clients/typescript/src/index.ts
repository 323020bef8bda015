import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./api";

export type { components, paths } from "./api";
export type Lease = components["schemas"]["Lease"];
export type Proxy = Lease["proxy"];
export type ApiError = components["schemas"]["Error"]["error"];
export type EgressApi = Client<paths>;

/** An error answer of the service, with its status and `{code, message, details}`. */
export class EgressError extends Error {
    constructor(
        readonly status: number,
        readonly code: string,
        message: string,
        readonly details?: unknown,
    ) {
        super(`${status} ${code}: ${message}`);
        this.name = "EgressError";
    }
}

/**
 * Throw this from a `withProxy` callback when the target blocked the proxy (a captcha, a 403/429 from the
 * site): the lease is released as `blocked`, so this proxy rests longer for this target.
 */
export class Blocked extends Error {
    constructor(message = "the target blocked this proxy") {
        super(message);
        this.name = "Blocked";
    }
}

export interface ClientOptions {
    /** The service, e.g. http://127.0.0.1:8080. */
    baseUrl: string;
    /** A bearer token; sent in the Authorization header, never in the URL. */
    token: string;
    fetch?: typeof fetch;
}

/** A typed openapi-fetch client for every route of the service. */
export function createEgressClient(opts: ClientOptions): EgressApi {
    const client = createClient<paths>({
        baseUrl: opts.baseUrl,
        fetch: opts.fetch,
        headers: { authorization: `Bearer ${opts.token}` },
    });
    return client;
}

export interface WithProxyOptions {
    /** Lease lifetime; the service's default is 300 s. */
    ttlSeconds?: number;
    /**
     * Sticky session key ([A-Za-z0-9_.~], up to 128): the same proxy while it stays usable; the lease's
     * `rebound` says when the session had to move to another one.
     */
    session?: string;
    /** Longest total wait for a free proxy across 503s and 429 target_busy; each wait honours Retry-After. @default 30000 */
    maxWaitMs?: number;
    /** Called before each wait on a 503 or a 429 target_busy (for logs and tests). */
    onRetry?: (info: { attempt: number; waitMs: number; code: string }) => void;
    signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, ms);
        signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
    });

function toError(status: number, body: unknown): EgressError {
    const e = (body as { error?: ApiError } | undefined)?.error;
    return new EgressError(status, e?.code ?? "unexpected", e?.message ?? `unexpected answer ${status}`, e?.details);
}

/** Leases a proxy, waiting on 503 (and 429 target_busy) as Retry-After says, up to `maxWaitMs` in total. */
export async function lease(
    api: EgressApi,
    pool: string | undefined,
    target: string | undefined,
    opts: WithProxyOptions = {},
): Promise<Lease> {
    const deadline = Date.now() + (opts.maxWaitMs ?? 30_000);
    for (let attempt = 1; ; attempt++) {
        const { data, error, response } = await api.POST("/v1/leases", {
            body: { pool, target, ttlSeconds: opts.ttlSeconds, session: opts.session },
            signal: opts.signal,
        });
        if (data) return data.lease;
        const err = toError(response.status, error);
        const retryAfter = Number(response.headers.get("retry-after"));
        const waitMs = Math.max(1, Number.isFinite(retryAfter) ? retryAfter : 1) * 1000;
        // 503: nothing free now; 429 target_busy: the pool's politeness limit for this site. Both pass.
        const passing = response.status === 503 || (response.status === 429 && err.code === "target_busy");
        if (!passing || Date.now() + waitMs > deadline) throw err;
        opts.onRetry?.({ attempt, waitMs, code: err.code });
        await sleep(waitMs, opts.signal);
    }
}

/** Releases a lease. A 410 (the lease already ended: expired, or its proxy was removed) is not an error here. */
export async function release(api: EgressApi, leaseId: string, outcome: "ok" | "blocked" | "error"): Promise<void> {
    const { error, response } = await api.POST("/v1/leases/{id}/release", {
        params: { path: { id: leaseId } },
        body: { outcome },
    });
    if (response.ok || response.status === 410) return;
    throw toError(response.status, error);
}

/**
 * Leases a proxy of `pool` for `target` (host name; enables the per-target cooldown), runs `fn` with it
 * and releases it with the outcome: `ok` when `fn` resolves, `blocked` when it throws `Blocked`, `error`
 * for anything else (counts against the proxy's health). `fn`'s own error is rethrown after the release.
 */
export async function withProxy<T>(
    api: EgressApi,
    pool: string | undefined,
    target: string | undefined,
    fn: (proxy: Proxy, lease: Lease) => Promise<T>,
    opts: WithProxyOptions = {},
): Promise<T> {
    const l = await lease(api, pool, target, opts);
    let result: T;
    try {
        result = await fn(l.proxy, l);
    } catch (e) {
        await release(api, l.id, e instanceof Blocked ? "blocked" : "error").catch(() => undefined); // fn's error is the one that matters
        throw e;
    }
    await release(api, l.id, "ok");
    return result;
}

/** The typed API (`api.GET("/v1/pools")`, …) and `withProxy` bound to one service and token. */
export class EgressClient {
    readonly api: EgressApi;

    constructor(opts: ClientOptions) {
        this.api = createEgressClient(opts);
    }

    withProxy<T>(
        pool: string | undefined,
        target: string | undefined,
        fn: (proxy: Proxy, lease: Lease) => Promise<T>,
        opts?: WithProxyOptions,
    ): Promise<T> {
        return withProxy(this.api, pool, target, fn, opts);
    }
}
