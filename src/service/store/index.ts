/**
 * The lease store: where the serving state of leases lives. `memory` (LeaseManager, the default) or
 * Redis (RedisLeaseStore), chosen by `egress serve --store` / `EGRESS_STORE` (parseStoreSpec).
 */
export { RedisLeaseStore } from "./redis-store";
export type { RedisStoreOptions } from "./redis-store";
export { immediate, settle } from "./types";
export { StoreUnavailableError } from "../../state/redis/unavailable";
export type { LeaseStore, MaybePromise } from "./types";
export { parseStoreSpec, redactStoreUrl, STORE_RULE, StoreSpecError } from "../../state/redis/url";
export type { StoreSpec } from "../../state/redis/url";
export { openRedis } from "../../state/redis/open-redis";
export type { SentinelSpec } from "../../state/redis/sentinel-url";
