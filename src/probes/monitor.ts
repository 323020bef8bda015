import type { ProxyMember } from "../model";
import { ProbeFn, ProbeOptions, ProbeResult, probeThroughProxy } from "./probe";
import { DEFAULT_THRESHOLDS, HealthThresholds, MemberHealth, MemberHealthView, Transition } from "./state";

export interface HealthMonitorOptions {
    /** Fetched through every proxy; the service's own `http://<service>/v1/echo` by default in the app. */
    checkUrl: string;
    /** Time between the starts of two probe rounds; a slow round delays the next, never overlaps it. @default 15000 */
    intervalMs?: number;
    /** Per probe. @default 5000 */
    timeoutMs?: number;
    /** Probes in flight at once, across the round and probes of newly added members. @default 32 */
    concurrency?: number;
    thresholds?: Partial<HealthThresholds>;
    /** TLS options for an https:// check URL. */
    tls?: Pick<ProbeOptions, "ca" | "rejectUnauthorized">;
    /**
     * The credentials a member requires (proxy basic auth), looked up at each probe so new ones apply at
     * once; undefined = none. Probes of a member that requires credentials fail (407) without them.
     */
    credentials?: (member: ProxyMember) => ProbeOptions["proxyAuth"];
    /** Replace the real probe in unit tests. It should not reject; if it does, that counts as a failure. */
    probe?: ProbeFn;
    /** @default Date.now */
    now?: () => number;
    /** Every state change — wire to `leases.setEligible(t.id, t.to === "healthy")`, logs and metrics. */
    onTransition?: (t: Transition) => void;
    /** Every probe result. */
    onProbe?: (p: { id: string; ok: boolean; latencyMs: number; status?: number; error?: string }) => void;
    /** A listener threw. The monitor carries on; by default the error becomes a process warning. */
    onError?: (err: unknown) => void;
}

interface Entry {
    member: ProxyMember;
    health: MemberHealth;
    inFlight: boolean;
}

/** Runs one thing at a time per slot; a FIFO of waiters keeps probes of a round in member order. */
class Slots {
    private active = 0;
    private readonly waiting: (() => void)[] = [];
    constructor(private readonly max: number) {}
    async run<T>(fn: () => Promise<T>): Promise<T> {
        if (this.active >= this.max) await new Promise<void>((r) => this.waiting.push(r));
        else this.active++;
        try {
            return await fn();
        } finally {
            const next = this.waiting.shift();
            if (next)
                next(); // hand the slot over without releasing it
            else this.active--;
        }
    }
}

/**
 * Probes every member through its proxy on a fixed cadence and keeps one `MemberHealth` per member.
 * Membership follows the stack (`setMembers`); verdicts flow out through `onTransition`.
 * Call `stop()` before shutdown: the round timer is not unref'd, on purpose, so a monitor in a test
 * or a CLI command cannot silently stop probing because nothing else kept the process alive.
 */
export class HealthMonitor {
    private readonly entries = new Map<string, Entry>();
    private readonly slots: Slots;
    private readonly o: Required<
        Omit<HealthMonitorOptions, "tls" | "onTransition" | "onProbe" | "thresholds" | "credentials">
    > &
        HealthMonitorOptions;
    private readonly thresholds: HealthThresholds;
    private timer: NodeJS.Timeout | undefined;
    private running = false;
    /** Bumped by start(): a round from before a stop()/start() pair must not schedule a second chain. */
    private generation = 0;
    private round: Promise<void> | undefined;
    private readonly pending = new Set<Promise<void>>();

    /**
     * Connects the listeners of parts built after the monitor (the fleet that takes its verdicts, the
     * metrics): the service builds every part first, then subscribes them (src/service/start/subscribe-parts.ts).
     */
    subscribe(hooks: Pick<HealthMonitorOptions, "credentials" | "onTransition" | "onProbe">): void {
        Object.assign(this.o, Object.fromEntries(Object.entries(hooks).filter(([, v]) => v !== undefined)));
    }

    constructor(options: HealthMonitorOptions) {
        const given = Object.fromEntries(
            Object.entries(options).filter(([, v]) => v !== undefined),
        ) as HealthMonitorOptions;
        this.o = {
            intervalMs: 15_000,
            timeoutMs: 5_000,
            concurrency: 32,
            probe: probeThroughProxy,
            now: Date.now,
            onError: (e) =>
                process.emitWarning(`health monitor listener failed: ${e instanceof Error ? e.stack : String(e)}`),
            ...given,
        };
        for (const k of ["intervalMs", "timeoutMs", "concurrency"] as const)
            if (!Number.isInteger(this.o[k]) || this.o[k] < 1)
                throw new RangeError(`HealthMonitor option \`${k}\` must be a whole number ≥ 1, got ${this.o[k]}`);
        try {
            new URL(this.o.checkUrl);
        } catch {
            throw new RangeError(
                `HealthMonitor option \`checkUrl\` must be an absolute http(s) URL, got ${JSON.stringify(this.o.checkUrl)}`,
            );
        }
        this.thresholds = { ...DEFAULT_THRESHOLDS, ...options.thresholds };
        new MemberHealth("validate", 0, this.thresholds); // throws on bad thresholds, at construction
        this.slots = new Slots(this.o.concurrency);
    }

    /**
     * Follows the stack: survivors keep their state; removed members are dropped (an in-flight probe's
     * result is discarded); new members start `unknown` and, while running, are probed at once instead of
     * waiting for the next round. A member whose host or port changed starts over as `unknown`.
     */
    setMembers(members: readonly ProxyMember[]): void {
        const now = this.o.now();
        const keep = new Set(members.map((m) => m.id));
        for (const id of [...this.entries.keys()]) if (!keep.has(id)) this.entries.delete(id);
        const fresh: Entry[] = [];
        for (const m of members) {
            const e = this.entries.get(m.id);
            if (e && e.member.host === m.host && e.member.port === m.port) {
                e.member = m;
                continue;
            }
            const entry: Entry = { member: m, health: new MemberHealth(m.id, now, this.thresholds), inFlight: false };
            this.entries.set(m.id, entry);
            fresh.push(entry);
            if (e && e.health.state !== "unknown")
                this.emit(() =>
                    this.o.onTransition?.({
                        id: m.id,
                        from: e.health.state,
                        to: "unknown",
                        reason: `address changed to ${m.host}:${m.port}`,
                        at: now,
                    }),
                );
        }
        if (this.running) for (const e of fresh) this.track(this.probeEntry(e));
    }

    /**
     * Takes up verdicts decided elsewhere (the previous leader's, src/service/cluster/verdicts.ts) for the
     * members it names, without transitions: the caller already acts on them. Call before `start()`; a
     * member whose address is not the one the verdict was made for (`address`: "host:port") starts over.
     */
    seed(views: readonly (MemberHealthView & { address?: string })[]): void {
        for (const v of views) {
            const e = this.entries.get(v.id);
            if (!e || e.inFlight || (v.address !== undefined && v.address !== `${e.member.host}:${e.member.port}`))
                continue;
            e.health.restore(v);
        }
    }

    /** Whether rounds are scheduled (between `start()` and `stop()`). */
    get probing(): boolean {
        return this.running;
    }

    /** Starts probing: a round now, then one every `intervalMs`. Idempotent. */
    start(): void {
        if (this.running) return;
        this.running = true;
        this.generation++;
        this.schedule(0);
    }

    /** Stops scheduling and waits for probes in flight (each bounded by `timeoutMs`). */
    async stop(): Promise<void> {
        this.running = false;
        clearTimeout(this.timer);
        this.timer = undefined;
        await Promise.all([this.round, ...this.pending]);
    }

    /** One round over every member, concurrency-bounded. Used by the scheduler; callable for `egress doctor`. */
    async probeAll(): Promise<void> {
        await Promise.all([...this.entries.values()].map((e) => this.probeEntry(e)));
    }

    /** Feed from the lease manager's `onError`: one lease error = one failure signal. */
    reportLeaseError(id: string, detail?: string): void {
        const e = this.entries.get(id);
        if (!e) return;
        const t = e.health.reportLeaseError(this.o.now(), detail);
        if (t) this.emit(() => this.o.onTransition?.(t));
    }

    get(id: string): MemberHealthView | undefined {
        return this.entries.get(id)?.health.snapshot();
    }

    snapshot(): MemberHealthView[] {
        return [...this.entries.values()].map((e) => e.health.snapshot());
    }

    private schedule(delayMs: number): void {
        const generation = this.generation;
        this.timer = setTimeout(() => {
            const started = Date.now();
            this.round = this.probeAll().finally(() => {
                this.round = undefined;
                // Fixed cadence measured from round start; a round longer than the interval runs back to back.
                if (this.running && generation === this.generation)
                    this.schedule(Math.max(0, this.o.intervalMs - (Date.now() - started)));
            });
        }, delayMs);
    }

    private track(p: Promise<void>): void {
        this.pending.add(p);
        void p.finally(() => this.pending.delete(p));
    }

    private async probeEntry(e: Entry): Promise<void> {
        if (e.inFlight) return; // a new member probed at once may still be in flight when the round comes by
        e.inFlight = true;
        try {
            const r = await this.slots.run(async () => {
                if (this.entries.get(e.member.id) !== e) return undefined; // removed while queued
                return this.probeSafely(e.member);
            });
            if (!r || this.entries.get(e.member.id) !== e) return; // removed or replaced while probing
            const at = this.o.now();
            const t = e.health.recordProbe(r, at);
            this.emit(() =>
                this.o.onProbe?.({
                    id: e.member.id,
                    ok: r.ok,
                    latencyMs: r.latencyMs,
                    status: r.status,
                    error: r.error,
                }),
            );
            if (t) this.emit(() => this.o.onTransition?.(t));
        } finally {
            e.inFlight = false;
        }
    }

    private async probeSafely(m: ProxyMember): Promise<ProbeResult> {
        const started = performance.now();
        try {
            const proxyAuth = this.o.credentials?.(m);
            return await this.o.probe({
                proxyHost: m.host,
                proxyPort: m.port,
                proxyTls: m.url.startsWith("https://"),
                checkUrl: this.o.checkUrl,
                timeoutMs: this.o.timeoutMs,
                ...this.o.tls,
                ...(proxyAuth ? { proxyAuth } : {}),
            });
        } catch (err) {
            return {
                ok: false,
                latencyMs: performance.now() - started,
                error: `probe threw: ${err instanceof Error ? err.message : String(err)}`,
            };
        }
    }

    private emit(fn: () => void): void {
        try {
            fn();
        } catch (err) {
            this.o.onError(err);
        }
    }
}
