import type { Logger } from "pino";
import type { LeaseManagerOptions } from "../leases/types";

/** What the Redis lease store is built with, and the shapes of its scripts' replies (redis-store.ts). */

export interface RedisStoreOptions extends Pick<
    LeaseManagerOptions,
    | "onError"
    | "defaultTtlSeconds"
    | "maxTtlSeconds"
    | "targetCooldownSeconds"
    | "blockedBaseSeconds"
    | "blockedMaxSeconds"
    | "busyRetryAfterSeconds"
    | "idleRetryAfterSeconds"
    | "tombstoneSeconds"
    | "sessionTtlSeconds"
> {
    /** redis:// or rediss:// (checked by parseStoreSpec). A secret: never logged or echoed with its password. */
    url: string;
    /** Key prefix, one per stack: `egress:<stack>:`. */
    prefix: string;
    log: Logger;
    /** Longest a command may take before the request is answered 503 store_unavailable. @default 1500 */
    commandTimeoutMs?: number;
    /** Retry-After of a store_unavailable answer. @default 2 */
    retryAfterSeconds?: number;
    /** How often the local view of live leases (isLeased, active) is re-read. @default 1000 */
    viewIntervalMs?: number;
    /** Redis replicas that must have a grant before it is answered (grant-replicas.ts). @default 0 */
    grantReplicas?: number;
    /** How long a grant waits for them (at most half the command timeout). @default 250 */
    grantWaitMs?: number;
    /**
     * Test only: the scripts take the time from the key `<prefix>clock` (epoch ms, as digits) instead of
     * Redis' TIME, so a test moves the clock as it does the memory manager's `now`. Key expiries (idle
     * sessions, tombstones) still run on Redis' own clock. Never set by the service.
     */
    testClock?: boolean;
}

export type Reply = (string | number)[];

/** Replies that mean "not now" rather than "a bug in a script": answered 503 like a lost connection. */
export const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN)\b/;
