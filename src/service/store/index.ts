/**
 * The lease store: where the serving state of leases lives. `memory` (LeaseManager, the default) or
 * Redis (RedisLeaseStore), chosen by `egress serve --store` / `EGRESS_STORE` (parseStoreSpec).
 */
export { RedisLeaseStore } from "./redis-store";
export type { RedisStoreOptions } from "./redis-store";
export { immediate, settle, StoreUnavailableError } from "./types";
export type { LeaseStore, MaybePromise } from "./types";
export { parseStoreSpec, redactStoreUrl, STORE_RULE, StoreSpecError } from "./url";
export type { StoreSpec } from "./url";
export { openRedis } from "./open-redis";
export type { SentinelSpec } from "./sentinel-url";
