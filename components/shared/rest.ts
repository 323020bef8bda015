/**
 * What the small REST clients of the health checker and `egress gc` (components/gcp/api.ts,
 * components/kubernetes/api.ts) have in common: options, the error they throw, query strings, error text.
 * Mapping a status to a stage stays with each client: the APIs mean different things by it. The class
 * (transient, permanent, quota) and the retries are shared by all kinds: components/shared/errors.ts, retry.ts.
 */
import { classifyHttp, ErrorClass, tagMessage } from "./errors";
import { defaultRetrySchedule, RetrySchedule, withRetry } from "./retry";
import { type CatalogueEntry, EXIT } from "../../src/model/error-catalogue";

/** Options every REST client takes. */
export interface RestClientOptions {
    /** Overrides the API's base URL (tests point clients at a local server). */
    endpoint?: string;
    /** Per-request timeout in milliseconds. @default 10000 */
    timeoutMs?: number;
    /** How transient failures (no answer, 408, 429, 5xx) are retried. @default defaultRetrySchedule() */
    retry?: RetrySchedule;
}

export const DEFAULT_TIMEOUT_MS = 10000;

/** Query parameters; undefined values are left out. */
export type Query = Record<string, string | number | undefined>;

/**
 * A failed API call: HTTP status (0 for timeouts and network errors), the API's reason, the stage it maps
 * to, and its class (from status, reason and message unless given). The message starts with the class tag.
 */
export class RestApiError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "RestApiError" };
    }
    readonly errorClass: ErrorClass;

    constructor(
        message: string,
        readonly status: number,
        readonly stage: string,
        readonly reason?: string,
        errorClass?: ErrorClass,
    ) {
        const c = errorClass ?? classifyHttp(status, reason, message);
        super(tagMessage(message, c));
        this.name = "RestApiError";
        this.errorClass = c;
    }
}

/** Runs one API call under the client's retry schedule: transient RestApiErrors are tried again. */
export function retryCall<T>(
    call: () => Promise<T>,
    schedule: RetrySchedule | undefined,
    signal?: AbortSignal,
): Promise<T> {
    return withRetry(call, {
        schedule: schedule ?? defaultRetrySchedule(),
        signal,
        retryable: (e) => e instanceof RestApiError && e.errorClass === "transient",
    });
}

/** `?k=v&k2=v2` without the undefined values; "" when nothing is left. */
export function queryString(query: Query): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
    return qs.size ? `?${qs}` : "";
}

/**
 * Why a request failed, for a message: `timed out after Nms` for timeouts, `aborted`, otherwise the error's
 * message plus the system error code (ECONNREFUSED...) when the message lacks it. `fetch` keeps that code in
 * `cause`, node's http on the error itself.
 */
export function errorText(e: unknown, timeoutMs: number): string {
    const err = e as any;
    if (err?.name === "TimeoutError") return `timed out after ${timeoutMs}ms`;
    if (err?.name === "AbortError") return "aborted";
    const message = String(err?.message ?? e);
    if (err?.cause?.code) return `${message} (${err.cause.code})`;
    // fetch says only "fetch failed"; the reason (a refused port, a TLS error) is in its cause.
    if (err?.cause?.message) return `${message} (${err.cause.message})`;
    return err?.code && !message.includes(err.code) ? `${message} (${err.code})` : message;
}
