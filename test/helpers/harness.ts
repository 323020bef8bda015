/**
 * What tests of a running service share, whichever way it runs (in this process, test/helpers/service.ts;
 * as `egress serve` children, test/helpers/processes.ts): one call shape, one wait, one sleep, one teardown.
 */
import { after } from "node:test";

/** How a test calls the API: a token (the service's admin token unless given; `null` sends none), a body. */
export interface CallOptions {
    /** Defaults to the service's admin token; `null` sends no authorization header. */
    token?: string | null;
    /** Sent as JSON. */
    body?: unknown;
    /** Sent as it is (a malformed body, say); `body` wins when both are given. */
    raw?: string;
    headers?: Record<string, string>;
}

/** An answer: the body parsed as JSON, or the text when it is not JSON. */
export interface CallResult {
    status: number;
    headers: Headers;
    body: any;
}

/** A running egress service, in-process or spawned. */
export interface ServiceClient {
    url: string;
    call(method: string, route: string, opts?: CallOptions): Promise<CallResult>;
}

/** The request `opts` make: `defaults.headers` under the caller's own, the token, a JSON body. */
export function requestOf(
    opts: CallOptions,
    defaults: { token: string; headers?: Record<string, string> },
): { headers: Record<string, string>; body: string | undefined } {
    const headers: Record<string, string> = { ...defaults.headers, ...opts.headers };
    const token = opts.token === undefined ? defaults.token : opts.token;
    if (token) headers.authorization = `Bearer ${token}`;
    const body = opts.body !== undefined ? JSON.stringify(opts.body) : opts.raw;
    if (body !== undefined) headers["content-type"] ??= "application/json";
    return { headers, body };
}

/** A body as the tests read it: JSON when it parses (tests assert on the text when it does not). */
export function parseBody(text: string): any {
    try {
        return JSON.parse(text);
    } catch {
        return text;
    }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Thrown inside a `waitFor` to end the wait at once: what it waits for can no longer come. */
export class GiveUp extends Error {}

/** What a wait returns: its poll's value, any falsy one (still waiting) left out. */
export type Truthy<T> = Exclude<T, undefined | null | false | 0 | "">;

/**
 * Polls `fn` until it returns a truthy value (returned) or `timeoutMs` passed, then fails naming `what`
 * and the last error. An error `fn` throws is retried (a service restarting refuses connections for a
 * moment), unless it is a `GiveUp`.
 */
export async function waitFor<T>(
    what: string,
    fn: () => T | Promise<T>,
    timeoutMs = 60_000,
    everyMs = 100,
): Promise<Truthy<T>> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
        try {
            const v = await fn();
            if (v) return v as Truthy<T>;
        } catch (e) {
            if (e instanceof GiveUp) throw e;
            last = e;
        }
        if (Date.now() >= deadline)
            throw new Error(
                `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`,
            );
        await sleep(everyMs);
    }
}

/**
 * Waits until operation `opId` finished (any status but queued or running) and returns it. A 503 is
 * asked again (no replica leads for a moment: a failover); any other answer without the operation fails.
 */
export async function settled(svc: ServiceClient, opId: string, timeoutMs = 120_000, token?: string): Promise<any> {
    return waitFor(
        `operation ${opId} to settle`,
        async () => {
            const got = await svc.call("GET", `/v1/operations/${opId}`, { token });
            if (got.status === 503) return undefined;
            const op = got.body?.operation;
            if (!op) throw new GiveUp(`GET /v1/operations/${opId} answered ${got.status}: ${JSON.stringify(got.body)}`);
            return op.status !== "queued" && op.status !== "running" ? op : undefined;
        },
        timeoutMs,
        100,
    );
}

/** What a test file made and must close at its end. */
export interface Teardown {
    /** Closes `x` at the end (its `close` as it is then: a restarted service closes its last run). */
    own<T extends { close(): unknown }>(x: T): T;
    /** Runs `fn` at the end. */
    add(fn: () => unknown): void;
}

/**
 * The teardown of a test file (call it at the top level): one `after` hook that closes what was handed to
 * it, the last made first (a service before the origin it proxies to). Each runs even when one before it
 * failed, so nothing is left running; the first failure then fails the hook.
 */
export function teardown(): Teardown {
    const fns: (() => unknown)[] = [];
    after(async () => {
        const failures: unknown[] = [];
        for (const fn of fns.reverse())
            await Promise.resolve()
                .then(fn)
                .catch((e: unknown) => failures.push(e));
        if (failures.length) throw failures[0];
    });
    return {
        own(x) {
            fns.push(() => x.close());
            return x;
        },
        add: (fn) => void fns.push(fn),
    };
}
