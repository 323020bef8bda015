/**
 * Leases: which crawler holds which proxy. `LeaseManager` is the whole API; wire it like this:
 *
 *   const leases = new LeaseManager({ onError: (id) => monitor.reportLeaseError(id) });
 *   monitor = new HealthMonitor({ onTransition: (t) => leases.setEligible(t.id, t.to === "healthy"), ... });
 *   on stack outputs: leases.setMembers(proxies, poolSettings); monitor.setMembers(proxies);
 *     (poolSettings: each pool's `cooldownSeconds` and `sessionTtlSeconds`, the sticky sessions' idle TTL)
 *   every few seconds: leases.sweep();
 *   POST /v1/leases → acquire(body): ok → 201 {lease} (+ `rebound` with a `session`); else 503 + Retry-After: retryAfterSeconds.
 *   POST /v1/leases/:id/release → release(id, outcome): ok → 200; unknown-lease → 404; expired → 410
 *   (`lease_expired` for a TTL, `proxy_removed` when its member was taken away: see `revoke`).
 */
export { LeaseManager } from "./manager";
export * from "./types";
