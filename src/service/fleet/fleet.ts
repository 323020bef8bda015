import {
    credentialsOf,
    type PoolConfig,
    type ProxyCredentials,
    type ProxyMember,
    type StackCredentials,
} from "../../model";
import type { AcquireResult } from "../leases";
import { type LeaseStore, type MaybePromise, settle } from "../store/types";
import type { AcquireRequest, ReleaseOutcome, Removal } from "../leases/types";
import { poolLeaseSettings } from "../leases/shared";
import type { HealthState, Lifecycle } from "./lifecycle";

export type { HealthState } from "./lifecycle";
import type { Operation } from "../../state/operations/operation";
import { memberUpstreamUrl } from "./credentials";
import type { HealthSource, MemberNote, PoolCounts, ProxyView, ActiveLeaseView, FleetAcquire } from "./views";
import { grantAnswer, notReadYet, refusal } from "./acquire-answer";
import { KnownScopes, labelsOf } from "./scopes";
import { MemberNotes } from "./member-notes";
import { activeLeaseView, proxyView } from "./discovery";
import { FleetListeners } from "./listeners";

/** How many members a replica passes over, unknown to it yet, before it answers "retry" (Fleet.notKnownHere). */
const MAX_PASSED_OVER = 8;

export type {
    HealthSource,
    MemberNote,
    PoolCounts,
    ProxyView,
    LeaseView,
    ActiveLeaseView,
    FleetAcquire,
} from "./views";

/**
 * The service's view of live proxies: members from stack outputs, health from the monitor, leases
 * from the lease manager. Stack outputs are the source of truth for who exists; health decides who may
 * be leased.
 */
export class Fleet {
    private members = new Map<string, ProxyMember>();
    /** The pools and zones an acquire may name (scopes.ts). */
    private readonly scopes = new KnownScopes();
    private configs: PoolConfig[] = [];
    /** Each member's labels as selectors see them (labelsOf), as of the last sync; discovery shows them. */
    private labels = new Map<string, Record<string, string>>();
    /** Drains and failed operations naming members, this replica's or the leader's (member-notes.ts). */
    private readonly memberNotes: MemberNotes;
    /** Credentials members require (the secret stack outputs `credentials` and `memberCredentials`). Never logged. */
    private credentials: StackCredentials = { pools: {}, members: {} };
    /** Who hears of releases, outcomes and refusals (listeners.ts). */
    private readonly listeners = new FleetListeners();

    constructor(
        private readonly leases: LeaseStore,
        private readonly health: HealthSource,
    ) {
        this.memberNotes = new MemberNotes(health);
    }

    /** Replaces the member list (after every operation and at start). Survivors keep health and leases. */
    sync(members: ProxyMember[], pools: PoolConfig[]): void {
        this.members = new Map(members.map((m) => [m.id, m]));
        this.configs = pools;
        // Members without an address yet (still provisioning) are listed but never probed or leased.
        const addressed = members.filter((m) => m.host);
        this.health.setMembers(addressed);
        this.memberNotes.forgetErrorsUnless((id) => this.members.has(id));
        const labels = (this.labels = labelsOf(members, pools));
        this.scopes.sync(members, pools, labels);
        this.leases.setMembers(
            addressed.map((m) => ({
                id: m.id,
                pool: m.pool,
                zone: m.zone,
                labels: labels.get(m.id),
                eligible: this.leasable(m.id),
            })),
            poolLeaseSettings(pools),
        );
    }

    /** Replaces the pools' credentials (read from the stack after every sync that has members requiring them). */
    setCredentials(credentials: StackCredentials): void {
        this.credentials = credentials;
    }

    /**
     * The credentials `member` requires: its own proxy's (a listed static proxy), else its pool's `auth`;
     * undefined when it requires none (or they are not known yet).
     */
    credentialsOf(member: Pick<ProxyMember, "id" | "pool" | "auth">): ProxyCredentials | undefined {
        return credentialsOf(this.credentials, member);
    }

    /**
     * The URL to send traffic through member `id`, with its credentials when it requires them
     * (memberUpstreamUrl); undefined for an unknown member. For the gateway's upstream. Never log it.
     */
    upstreamUrl(id: string): string | undefined {
        const m = this.members.get(id);
        return m && memberUpstreamUrl(m, this.credentialsOf(m));
    }

    /**
     * The health engine calls this on every transition: only healthy members are leasable. (A verdict for
     * a member the lease manager has not seen yet is kept there until the member arrives.)
     */
    healthChanged(id: string, state: HealthState): void {
        this.leases.setEligible(id, state === "healthy" && !this.memberNotes.drainOf(id));
    }

    /** Starts (`until` given) or ends a member's drain: a draining member is never leased; its lease runs on. */
    setDraining(id: string, until: number | undefined): void {
        this.memberNotes.setDraining(id, until);
        this.leases.setEligible(id, this.leasable(id));
    }

    /** Ends the lease on a member the service takes away; its holder's release then gets 410 with `removal`. */
    revoke(id: string, removal: Removal): boolean {
        return this.leases.revoke(id, removal) !== undefined;
    }

    isLeased(id: string): boolean {
        return this.leases.isLeased(id);
    }

    /** Brings isLeased up to date with leases other replicas granted or released (a Redis store's view lags a second). */
    async syncLeases(): Promise<void> {
        await this.leases.syncView?.();
    }

    /** Registers `fn` to run after every successful release; returns its removal. */
    onRelease(fn: () => void): () => void {
        return this.listeners.onRelease(fn);
    }

    /** A failed operation: remembers its error for the members it names (a heal's members always). */
    operationSettled(op: Operation): void {
        this.memberNotes.operationSettled(op, this.members.keys());
    }

    private leasable(id: string): boolean {
        return this.health.get(id)?.state === "healthy" && !this.memberNotes.drainOf(id);
    }

    /**
     * What this replica knows of each member's lifecycle besides health (its drains, failed operations
     * naming members): a leader publishes it with its verdicts, so followers show the same.
     */
    notes(): Map<string, MemberNote> {
        return this.memberNotes.notes();
    }

    /**
     * Members as discovery shows them. `withCredentials` (callers whose scope may lease: `lease`, `admin`)
     * puts a member's credentials into its `url`; otherwise `url` is bare and `auth: true` says they are needed.
     */
    proxies(
        filter: { pool?: string; zone?: string; state?: HealthState; lifecycle?: Lifecycle } = {},
        opts: { withCredentials?: boolean } = {},
    ): ProxyView[] {
        const out: ProxyView[] = [];
        for (const m of this.members.values()) {
            if (filter.pool && m.pool !== filter.pool) continue;
            if (filter.zone && m.zone !== filter.zone) continue;
            const h = this.health.get(m.id);
            const drain = this.memberNotes.drainOf(m.id);
            const opError = this.memberNotes.opErrorOf(m.id);
            const url = opts.withCredentials ? memberUpstreamUrl(m, this.credentialsOf(m)) : m.url;
            const leased = this.leases.isLeased(m.id);
            const view = proxyView(m, h, { url, leased, drain, opError, labels: this.labels.get(m.id) });
            if (filter.state && view.health !== filter.state) continue;
            if (filter.lifecycle && view.lifecycle !== filter.lifecycle) continue;
            out.push(view);
        }
        return out;
    }

    /** Member counts by health and lease state, per pool. */
    poolCounts(): Record<string, PoolCounts> {
        const counts: Record<string, PoolCounts> = {};
        for (const m of this.members.values()) {
            const c = (counts[m.pool] ??= { actual: 0, healthy: 0, unhealthy: 0, unknown: 0, leased: 0, draining: 0 });
            c.actual++;
            if (this.memberNotes.drainOf(m.id)) c.draining++;
            c[this.health.get(m.id)?.state ?? "unknown"]++;
            if (this.leases.isLeased(m.id)) c.leased++;
        }
        return counts;
    }

    /** Active leases, oldest first. */
    activeLeases(): ActiveLeaseView[] {
        return this.leases.active().map(activeLeaseView);
    }

    /** Sets who hears of refused acquires (one listener: the autoscaler, connected by the start-up). */
    onRefused(fn: (pool: string, via: "lease" | "gateway") => void): void {
        this.listeners.onRefused(fn);
    }

    /**
     * Synchronous with the memory store; a promise with a store across the network (it may reject with
     * StoreUnavailableError). `via` says which door asked (POST /v1/leases or the gateway), for the
     * refusal signal; null for a retry of a request already counted (the gateway's waiting room).
     */
    acquire(
        req: AcquireRequest,
        via: "lease" | "gateway" | null = "lease",
        passedOver = 0,
    ): MaybePromise<FleetAcquire> {
        const unknown = this.scopes.refusal(req);
        if (unknown) return unknown;
        const known = req.session !== undefined && this.leases.sessionMember(req.session, req.pool) !== undefined;
        // A promise the callback returns is flattened by the store's own promise (settle's `then`).
        return settle(this.leases.acquire(req), (r): MaybePromise<FleetAcquire> => {
            // A gateway retry ended its failed lease in the same step: heard as any release is.
            if (r.replaced) this.listeners.released(r.replaced.proxyId, req.replaces!.outcome);
            if (r.ok && !this.members.has(r.lease.proxyId)) return this.notKnownHere(req, via, r, passedOver);
            // Only a named pool's refusals are demand of that pool; "any pool" names none to grow. A site
            // at its politeness limit is not demand: more members would not be let at it.
            if (!r.ok && r.reason !== "target-busy" && req.pool !== undefined && via) this.refused(req.pool, via);
            return this.granted(req, known, r);
        }) as MaybePromise<FleetAcquire>;
    }

    /**
     * The shared store granted a member this replica has not read from the stack yet: the leader
     * published it (a scale-up, a failover's convergence) a moment before this replica's fleet caught up,
     * so this replica cannot say where the member is. Answering anyway was a 500 that left the lease held
     * until its TTL. The lease goes straight back (an unused `ok` release, straight to the store, so no
     * outcome listener counts it here) and the acquire is asked again without that member. After
     * MAX_PASSED_OVER such members the answer is "none available", retry in 1 s: by then the next fleet
     * refresh knows them.
     */
    private async notKnownHere(
        req: AcquireRequest,
        via: "lease" | "gateway" | null,
        r: Extract<AcquireResult, { ok: true }>,
        passedOver: number,
    ): Promise<FleetAcquire> {
        await this.leases.release(r.lease.id, "ok");
        if (passedOver + 1 >= MAX_PASSED_OVER) return notReadYet(req);
        const exclude = [...(req.exclude ?? []), r.lease.proxyId];
        return this.acquire({ ...req, exclude, replaces: undefined }, via, passedOver + 1);
    }

    /** A request of `pool` found no member (also one that queued behind waiting ones without trying). */
    refused(pool: string, via: "lease" | "gateway"): void {
        this.listeners.refused(pool, via);
    }

    private granted(req: AcquireRequest, known: boolean, r: AcquireResult): FleetAcquire {
        if (!r.ok) return refusal(req, r);
        const m = this.members.get(r.lease.proxyId)!; // acquire passed over members not known here
        return grantAnswer(req, known, r, m, memberUpstreamUrl(m, this.credentialsOf(m)));
    }

    release(leaseId: string, outcome: ReleaseOutcome) {
        return settle(this.leases.release(leaseId, outcome), (r) => {
            if (!r.ok) return r;
            this.listeners.released(r.lease.proxyId, outcome);
            return r;
        });
    }

    /** A block the client reports after the fact (POST /v1/blocks): `proxyId` rests for `target`. */
    reportBlocked(proxyId: string, target: string): MaybePromise<number | undefined> {
        return settle(this.leases.reportBlocked(proxyId, target), (until) => {
            if (until !== undefined) this.listeners.outcome(proxyId, "blocked");
            return until;
        });
    }

    /** Registers the one listener told of every outcome (the rotator's outcome window). */
    onOutcome(fn: (member: string, outcome: ReleaseOutcome) => void): void {
        this.listeners.onOutcome(fn);
    }

    /** Whether `pool` is configured (the gateway refuses others before leasing). */
    hasPool(pool: string): boolean {
        return this.scopes.has(pool);
    }

    /** The pools of the config the last sync saw (metrics: desired replicas). */
    poolConfigs(): readonly PoolConfig[] {
        return this.configs;
    }

    /** Members as stack state lists them (for the drainer's plans). */
    list(): ProxyMember[] {
        return [...this.members.values()];
    }
}
