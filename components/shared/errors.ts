/**
 * The three classes every provider failure falls into, in one place for all kinds:
 * - `transient`: may pass by itself (refused or dropped connections, timeouts, HTTP 429/5xx). Providers
 *   retry these (components/shared/retry.ts) before they give up;
 * - `permanent`: an operator must act (rejected credentials, host key mismatch, a missing image, bad XML).
 *   Never retried: the error says what failed, where, and why;
 * - `quota`: the cloud refused for lack of quota. Not retried (waiting rarely frees quota) and reported as
 *   such, because the fix (a quota request, another zone) differs from both others.
 *
 * Errors cross the Pulumi engine as strings, so the class travels as a tag at the start of the message
 * (`[quota] ...`); `errorClassOf` reads it back from an Error or from any text that carries it.
 * Self-contained (no imports): the KVM dynamic providers are serialized with what they use.
 */

export type ErrorClass = "transient" | "permanent" | "quota";

/** `[transient]`, `[permanent]` or `[quota]`: the tag that starts a classified message. */
export function classTag(c: ErrorClass): string {
    return `[${c}]`;
}

/** `message` with the class tag in front; a message that already has a tag keeps it (the first class found wins). */
export function tagMessage(message: string, c: ErrorClass): string {
    return /^\[(transient|permanent|quota)\] /.test(message) ? message : `${classTag(c)} ${message}`;
}

/**
 * The class of an error: its `errorClass` field, else the first tag in its message (or in the text, when
 * given a string: an engine diagnostic quotes the provider's message somewhere inside its own).
 */
export function errorClassOf(e: unknown): ErrorClass | undefined {
    const field = (e as { errorClass?: unknown } | undefined)?.errorClass;
    if (field === "transient" || field === "permanent" || field === "quota") return field;
    const text = typeof e === "string" ? e : (e as { message?: unknown } | undefined)?.message;
    const m = typeof text === "string" ? /\[(transient|permanent|quota)\]/.exec(text) : null;
    return (m?.[1] as ErrorClass | undefined) ?? undefined;
}

/** Gives `e` its class: sets `errorClass` and tags its message. Returns `e` for `throw classify(e, ...)`. */
export function classify<E extends Error>(e: E, c: ErrorClass): E & { errorClass: ErrorClass } {
    const out = e as E & { errorClass: ErrorClass };
    out.errorClass = c;
    out.message = tagMessage(e.message, c);
    return out;
}

/** Words the clouds use for quota: GCE `QUOTA_EXCEEDED`/`quotaExceeded`, Kubernetes ResourceQuota's `exceeded quota`. */
export function mentionsQuota(text: string | undefined): boolean {
    return /QUOTA_EXCEEDED|quotaExceeded|exceeded quota/i.test(text ?? "");
}

/**
 * Google's reasons for "too many requests right now" (sent as 403 by older APIs): transient, not quota.
 * An array, not a Set: this travels with serialized dynamic providers, and the closure serializer does
 * not carry a Set.
 */
const RATE_LIMIT_REASONS: readonly string[] = ["rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"];

/**
 * The class of a failed HTTP call. `status` 0 means no answer (refused, reset, timed out): transient.
 * Quota first (a quota 403 or 429 is not worth retrying), then 408/429/5xx and rate-limit reasons are
 * transient; every other answer (400, 401, 403, 404, 409...) is permanent: asking again gets the same.
 */
export function classifyHttp(status: number, reason?: string, text?: string): ErrorClass {
    if (mentionsQuota(reason) || mentionsQuota(text)) return "quota";
    if (status === 0 || status === 408 || status === 429 || status >= 500) return "transient";
    if (reason && RATE_LIMIT_REASONS.includes(reason)) return "transient";
    return "permanent";
}
