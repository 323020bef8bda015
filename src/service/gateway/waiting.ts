import type { Fleet } from "../fleet/fleet";
import type { FleetAcquire } from "../fleet/views";
import type { GatewayMetrics } from "../observe/gateway-metrics";
import type { MaybePromise } from "../store/types";
import { selectorOf } from "../leases/types";

/**
 * Where gateway requests wait when every member they could use is busy: first come first served per
 * line (pool, zone and target: requests that want the same members), up to `waitMs`, instead of an
 * instant 503. A crawler that opens 50 connections against 10 members is slowed, not failed.
 *
 * A line is tried again, head first, when a lease is released here (`kick`) and every `pollMs` while
 * anyone waits: a release on another replica (a shared store) or a rest running out makes no local
 * event. A head that still finds nothing stops the round, so nobody behind it jumps ahead; a newcomer
 * joins the back of a non-empty line without trying. Past its deadline a waiter gets the last answer it
 * saw (503 with Retry-After); a client that goes away leaves its line at once.
 */
export interface WaitingOptions {
    /** Longest wait; 0 turns waiting off (an instant 503, the gateway's behaviour before). */
    waitMs: number;
    /** Most requests waiting at once, all lines together; the next one gets its 503 at once. @default 1000 */
    maxWaiting?: number;
    /** How often waiting lines are tried without a local release. @default 100 */
    pollMs?: number;
    /** Called with the time each successful waiter waited, in seconds (a metric). */
    onWaited?: (line: string, seconds: number) => void;
    /** Called with the number of waiting requests whenever it changes (a gauge). */
    onCount?: (n: number) => void;
    /** Gives back a lease granted to a waiter that left while its attempt ran (timed out, client gone). */
    giveBack: (granted: Extract<FleetAcquire, { ok: true }>) => void;
}

type Try = () => MaybePromise<FleetAcquire>;

interface Waiter {
    attempt: Try;
    since: number;
    last: FleetAcquire;
    resolve: (r: FleetAcquire) => void;
    reject: (e: unknown) => void;
    timer: NodeJS.Timeout;
    /** Stops watching for the client going away. */
    unwatch?: () => void;
}

/** The line a request waits in: requests that want the same members (pool, zone and target). */
export function waitingLine(ask: {
    pool?: string;
    zone?: string;
    where?: Readonly<Record<string, string>>;
    target?: string;
}): string {
    const sel = selectorOf(ask)
        .map(([k, v]) => `${k}=${v}`)
        .sort()
        .join(",");
    return `${ask.pool ?? "*"}|${sel || "*"}|${ask.target}`;
}

/**
 * True for the answers waiting can change: nothing free now, no member yet, or the site at its
 * politeness limit (a lease for it ends, or a member's spacing runs out).
 */
export function worthWaiting(r: FleetAcquire): boolean {
    return !r.ok && (r.reason === "none-available" || r.reason === "no-members" || r.reason === "target-busy");
}

export class WaitingRoom {
    private readonly lines = new Map<string, Waiter[]>();
    private readonly busy = new Set<string>();
    private waiting = 0;
    private poll?: NodeJS.Timeout;

    constructor(private readonly o: WaitingOptions) {}

    get enabled(): boolean {
        return this.o.waitMs > 0;
    }

    /** How many requests wait now, per line (for the metrics' gauge). */
    sizes(): Map<string, number> {
        return new Map([...this.lines].map(([k, v]) => [k, v.length]));
    }

    /** Whether any request waits in any line now. */
    get anyWaiting(): boolean {
        return this.lines.size > 0;
    }

    /** Whether a newcomer to `line` must queue behind others instead of trying first. */
    hasLine(line: string): boolean {
        return (this.lines.get(line)?.length ?? 0) > 0;
    }

    /**
     * Waits in `line` for `attempt` to succeed (or to fail in a way waiting cannot help), up to
     * `waitMs`. `first` is the answer the request already got (its 503 if it times out). `gone` is
     * called with a function that leaves the line, for a client that closes while it waits; it returns
     * the undoing of its watch (called once the request leaves the line).
     */
    wait(
        line: string,
        attempt: Try,
        first: FleetAcquire,
        gone?: (leave: () => void) => () => void,
    ): Promise<FleetAcquire> {
        if (this.waiting >= (this.o.maxWaiting ?? 1000)) return Promise.resolve(first);
        return new Promise((resolve, reject) => {
            const w: Waiter = {
                attempt,
                since: Date.now(),
                last: first,
                resolve,
                reject,
                timer: setTimeout(() => this.leave(line, w, w.last), this.o.waitMs),
            };
            w.timer.unref();
            let q = this.lines.get(line);
            if (!q) this.lines.set(line, (q = []));
            q.push(w);
            this.waiting++; // not inside `onCount?.(…)`: an absent hook would skip the count with its argument
            this.o.onCount?.(this.waiting);
            this.startPolling();
            w.unwatch = gone?.(() => this.leave(line, w, w.last));
        });
    }

    /**
     * A lease was released here: its members may serve a waiting line now. Lines whose head has waited
     * longest go first, so a line that never empties (one busy site) cannot take every freed member.
     */
    kick(): void {
        if (this.lines.size === 0) return; // every release kicks: most find no one waiting
        const order = [...this.lines].sort((a, b) => a[1][0].since - b[1][0].since).map(([line]) => line);
        for (const line of order) void this.pump(line);
    }

    /** Answers every waiter with its last answer (the gateway is closing). */
    close(): void {
        for (const [line, q] of this.lines) for (const w of [...q]) this.leave(line, w, w.last);
        clearInterval(this.poll);
        this.poll = undefined;
    }

    private leave(line: string, w: Waiter, answer: FleetAcquire | { error: unknown }): void {
        const q = this.lines.get(line);
        const i = q?.indexOf(w) ?? -1;
        if (i < 0) return;
        q!.splice(i, 1);
        if (q!.length === 0) this.lines.delete(line);
        this.waiting--;
        this.o.onCount?.(this.waiting);
        clearTimeout(w.timer);
        w.unwatch?.();
        if (this.waiting === 0) {
            clearInterval(this.poll);
            this.poll = undefined;
        }
        if ("error" in answer) return w.reject(answer.error);
        if (answer.ok) this.o.onWaited?.(line, (Date.now() - w.since) / 1000);
        w.resolve(answer);
    }

    /** Tries the line head first until a head finds nothing; one round per line at a time. */
    private async pump(line: string): Promise<void> {
        if (this.busy.has(line)) return;
        this.busy.add(line);
        try {
            for (let w = this.lines.get(line)?.[0]; w; w = this.lines.get(line)?.[0]) {
                let r: FleetAcquire;
                try {
                    r = await w.attempt();
                } catch (e) {
                    // A store outage or a slow store: the waiter gets that answer (503 store_unavailable)
                    // now. Retrying every poll would send acquires that time out here yet still run in
                    // Redis, each leaving a lease nobody releases.
                    if (this.lines.get(line)?.includes(w)) this.leave(line, w, { error: e });
                    return;
                }
                if (!this.lines.get(line)?.includes(w)) {
                    // It left (timed out, client gone) while its attempt ran: a lease it got goes back.
                    if (r.ok) this.o.giveBack(r);
                    continue;
                }
                if (worthWaiting(r)) {
                    w.last = r;
                    return;
                }
                this.leave(line, w, r);
            }
        } finally {
            this.busy.delete(line);
        }
    }

    private startPolling(): void {
        if (this.poll) return;
        this.poll = setInterval(() => this.kick(), this.o.pollMs ?? 100);
        this.poll.unref();
    }
}

/** The gateway's room: waits recorded per pool, leases of waiters that left given back as `ok`. */
export function gatewayWaitingRoom(fleet: Fleet, metrics: GatewayMetrics, waitMs: number, maxWaiting?: number) {
    return new WaitingRoom({
        waitMs,
        maxWaiting,
        onWaited: (line, s) => metrics.waited(line.split("|")[0], s),
        onCount: (n) => metrics.waitingNow(n),
        giveBack: (g) => {
            const r = fleet.release(g.lease.id, "ok");
            if (r instanceof Promise) r.catch(() => undefined); // a store outage: the lease's TTL ends it
        },
    });
}
