import type { Logger } from "pino";
import type { StackDriver } from "../../engine";
import type { Fleet } from "../fleet/fleet";
import type { Scaler } from "../control/scaler";
import type { Reconciler } from "../control/heal/reconciler";
import type { BlockRules } from "../gateway";
import type { AllowRule, StickyRange } from "../gateway/doors";
import type { StoreSpec } from "../store";
import type { TlsFiles, TlsReload } from "./tls";

export interface ServeOptions {
    projectRoot: string;
    stack: string;
    /** @default 127.0.0.1 — loopback unless the operator opens it deliberately. */
    host?: string;
    /** @default 8080; 0 picks a free port. */
    port?: number;
    /** Tokens file; @default .egress/tokens-<stack>.json. `EGRESS_TOKENS` adds more. */
    tokensFile?: string;
    /** Run `up` once at start so the stack matches its config. @default true */
    converge?: boolean;
    probeIntervalMs?: number;
    /**
     * URL probed through every proxy; must be reachable *from the proxies* (and admitted by their ACL).
     * @default this service's loopback /v1/echo — right for local proxies only.
     */
    checkUrl?: string;
    /** Provider-health checks: ms between rounds (0 = off; default 60 s) and per-check timeout (default 30 s). */
    providerCheckIntervalMs?: number;
    providerCheckTimeoutMs?: number;
    /**
     * How often stack outputs are re-read when no operation runs: the fallback for changes made by
     * `egress up` elsewhere (a file backend's checkpoint is also watched, which sees them at once). @default 30000
     */
    outputsPollMs?: number;
    /** How long an operation waits for the stack's writer lock while another writer holds it. @default 1800000 */
    writerLockWaitMs?: number;
    log?: Logger;
    /** Extra CLI environment (tests: backend, passphrase). */
    engineEnv?: Record<string, string>;
    /** Local runtime state dir. @default engineHome().runDir */
    runDir?: string;
    /** Reconcile loop (self-healing, src/service/control/heal): time between rounds; 0 = off. @default 60000 */
    reconcileIntervalMs?: number;
    /**
     * Autoscaling (src/service/control/autoscale, pools with `autoscale`): time between samples and
     * decisions (0 = off; default 5 s), and the window signals are averaged over (default 30 s; a scale-up waits for one full window above target).
     */
    autoscaleIntervalMs?: number;
    autoscaleWindowMs?: number;
    /** Rotation by age (src/service/control/rotate, pools with `rotateAfterSeconds`): time between rounds; 0 = off. @default 10000 */
    rotateIntervalMs?: number;
    /** The dashboard timeline's sample interval (it keeps the last hour). @default 30000 */
    timelineIntervalMs?: number;
    /** Backoff after a failed repair. @default 1 min doubling to 30 min (tests shorten it) */
    healBackoff?: { baseMs: number; maxMs: number };
    /** Time between `: ping` comments on operation event streams. @default 15000 */
    sseHeartbeatMs?: number;
    /**
     * The rotating gateway (src/service/gateway): a forward proxy whose every request leases a member.
     * Off when undefined. Its front doors, all on `host` (default 127.0.0.1), each off when undefined and
     * on a free port with 0: `port` the plain HTTP proxy, `socksPort` SOCKS5.
     */
    gateway?: {
        port?: number;
        socksPort?: number;
        /** The HTTP proxy over TLS, serving `tls`'s certificate; needs `tls`. */
        tlsPort?: number;
        host?: string;
        blockRules?: BlockRules;
        waitMs?: number;
        /** Allowed sources (`--gateway-allow`): each names a token, checked at start (gateway/doors.ts). */
        allow?: AllowRule[];
        /** Sticky ports (`--gateway-sticky-ports`), on `host` too (gateway/doors.ts). */
        stickyPorts?: StickyRange[];
    };
    /**
     * A certificate (chain) and its key, PEM files: the API then serves HTTPS on `port`, and the
     * gateway's `tlsPort` serves them too. Read again by `RunningService.reloadTls` (SIGHUP).
     */
    tls?: TlsFiles;
    /** Rest per (proxy, target) after a lease against that target ends (leases and gateway alike). @default 0 */
    targetCooldownSeconds?: number;
    /**
     * Tests only: the clock the memory lease store's rules read (cooldowns, rests, lease TTLs, idle
     * sessions), so a test moves it past a rule of whole seconds instead of sleeping. Never set by `serve`.
     * @default Date.now
     */
    leaseClock?: () => number;
    /**
     * Where the serving state of leases lives (src/service/store): this process's memory, or Redis so a
     * restart or another replica loses nothing. @default { kind: "memory" }
     */
    store?: StoreSpec;
    /**
     * With a Redis store: how many of its replicas must have a lease grant before it is answered
     * (src/service/store/grant-replicas.ts). @default 1 with a Sentinel URL, else 0
     */
    storeGrantReplicas?: number;
    /**
     * With a Redis store: the URL other replicas reach this one's API at (they forward scale, operation
     * and heal requests to the leader). @default this replica's own listen URL
     */
    advertiseUrl?: string;
    /** With a Redis store: the leader lock's TTL; a dead leader is replaced within about this. @default 5000 */
    leaderTtlMs?: number;
    /**
     * With a Redis store: how long the engine run of a leader that lost the stack's lock may go on after it
     * was cancelled before its processes are ended (Scaler.abandonRunning). @default 30000
     */
    engineKillGraceMs?: number;
}

export interface RunningService {
    url: string;
    port: number;
    /** The gateway's proxy URL and port, when it runs. */
    gatewayUrl?: string;
    gatewayPort?: number;
    /** The gateway's SOCKS5 front door (`socks5h://host:port`) and its port, when it runs. */
    socksUrl?: string;
    socksPort?: number;
    /** The gateway's TLS port (`https://host:port`, a proxy URL) and its port, when it runs. */
    gatewayTlsUrl?: string;
    gatewayTlsPort?: number;
    /** With `tls`: reads the certificate and key again and serves them from now on (a failure keeps the old pair). */
    reloadTls?: () => TlsReload;
    driver: StackDriver;
    scaler: Scaler;
    fleet: Fleet;
    reconciler: Reconciler;
    /** Where the plain copy of the dev token is, when this start generated one (the token itself is never logged). */
    devTokenFile?: string;
    /**
     * Graceful stop: no new requests, the in-flight operation finishes (or, with `cancel`, is cancelled
     * safely and recorded as interrupted), probes stop.
     */
    close(opts?: { cancel?: boolean }): Promise<void>;
}

/** Checked before anything listens: a bad option must not leave a half-started service behind. */
export function checkServeOptions(opts: ServeOptions): void {
    if (opts.gateway?.tlsPort !== undefined && !opts.tls)
        throw new RangeError("--gateway-tls-port needs --tls-cert and --tls-key: the TLS port serves that certificate");
    const r = opts.reconcileIntervalMs;
    if (r !== undefined && !(Number.isFinite(r) && r >= 0))
        throw new RangeError(`reconcileIntervalMs must be 0 (off) or a positive number of milliseconds, got ${r}`);
    for (const [name, v] of [
        ["autoscaleIntervalMs", opts.autoscaleIntervalMs],
        ["autoscaleWindowMs", opts.autoscaleWindowMs],
        ["rotateIntervalMs", opts.rotateIntervalMs],
    ] as const)
        if (v !== undefined && !(Number.isFinite(v) && v >= 0))
            throw new RangeError(`${name} must be 0 (off) or a positive number of milliseconds, got ${v}`);
}
