import type { ProxyMember } from "../../model";
import type { HealthState, Lifecycle } from "./lifecycle";
import type { LifecycleNote } from "../cluster/verdicts";

/** What the fleet needs from the health engine (src/probes HealthMonitor fits). */
export interface HealthSource {
    setMembers(members: ProxyMember[]): void;
    get(id: string):
        | {
              state: HealthState;
              egressIp?: string;
              lastLatencyMs?: number;
              lastError?: string;
              consecutiveFailures?: number;
              lastProbeAt?: number;
              lastOkAt?: number;
          }
        | undefined;
    /**
     * With replicas (cluster/verdicts.ts), what the leader published of a member's lifecycle besides its
     * health: a follower's fleet shows the leader's drains and failed operations as its own.
     */
    note?(id: string): MemberNote | undefined;
}

/** A member's lifecycle facts a leader knows and its followers do not (cluster/verdicts.ts publishes them). */
export type MemberNote = LifecycleNote;

/** Members of one pool by state, for GET /v1/pools and the egress_proxies gauge. */
export interface PoolCounts {
    actual: number;
    healthy: number;
    unhealthy: number;
    unknown: number;
    leased: number;
    /** Members an operation is taking away (never leased again). */
    draining: number;
}

/** A member as discovery shows it. */
export interface ProxyView extends ProxyMember {
    health: HealthState;
    egressIp?: string;
    /** Round trip of the last probe through it (ms). */
    probeLatencyMs?: number;
    leased: boolean;
    lifecycle: Lifecycle;
    /** The last probe error (while probes fail) or failed operation's error naming this member. */
    lastError?: string;
    /** While draining: when a lease still running on it is ended and the member removed. */
    drainingUntil?: string;
}

export interface LeaseView {
    id: string;
    /** `url` carries the member's credentials when it requires them (`auth`): the holder may use it as is. */
    proxy: Pick<ProxyMember, "id" | "pool" | "provider" | "zone" | "host" | "port" | "url" | "auth">;
    target?: string;
    /** The sticky session it was taken through. */
    session?: string;
    /** With a session: true when the session moved to this member from another one. */
    rebound?: boolean;
    leasedAt: string;
    expiresAt: string;
}

/** An active lease as the dashboard lists it: without its id, which is what releases it. */
export interface ActiveLeaseView {
    proxy: string;
    pool: string;
    target?: string;
    leasedAt: string;
    expiresAt: string;
}

export type FleetAcquire =
    /** `session`: with a sticky session, whether it kept its proxy, moved, or is new (for metrics). */
    | { ok: true; lease: LeaseView; session?: "kept" | "rebound" | "new" }
    | {
          ok: false;
          reason: "unknown-pool" | "unknown-zone" | "unknown-label" | "no-members" | "none-available" | "session-gone";
          message: string;
          retryAfterSeconds: number;
      }
    /** Only the pool's per-site politeness stops a grant (leases/types.ts): 429 target_busy. */
    | { ok: false; reason: "target-busy"; message: string; retryAfterSeconds: number; pool: string; rule: string };
