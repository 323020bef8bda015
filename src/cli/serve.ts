import type { Command } from "commander";
import type { Logger } from "pino";
import { UsageError, GlobalOptions, projectDir, seconds } from "./context";
import { loadStackConfig } from "../config";
import { startService } from "../service/start/server";
import type { RunningService, ServeOptions } from "../service/start/options";
import { storeSpecOf } from "./store-lock";
import { blockHeader, doorFlags, listFlag, portFlag, tlsFlags } from "./serve-flags";
import { MAX_STICKY_PORTS } from "../service/gateway/doors";
import {
    jsonCommanderErrors,
    jsonProcessOutput,
    reportServeError,
    serveLoggers,
    type ServeLoggers,
} from "./serve-output";

/** How long a failed `egress serve` lingers before it exits, whatever is still open (issue 35). */
const FAILED_START_EXIT_MS = 1_000;

/**
 * `egress serve`: the HTTP service (scale API, discovery, leases, health, metrics). What `npm start` runs.
 * Every line it writes is JSON (serve-output.ts); the loggers are made on first use, so other commands
 * open no log destinations.
 */
export function registerServe(program: Command): void {
    let loggers: ServeLoggers | undefined;
    const out = () => (loggers ??= serveLoggers());
    const serve = program
        .command("serve")
        .description("run the HTTP service: scale API, discovery and leases, health probes, /metrics");
    listenAndLoopOptions(serve);
    gatewayOptions(serve);
    storeOptions(serve);
    serve
        .option(
            "--check-url <url>",
            "URL probed through every proxy; must be reachable from the proxies (default: this service's /v1/echo on loopback, right for local proxies only)",
            process.env.EGRESS_CHECK_URL,
        )
        .action(async (o, cmd: Command) => {
            const { log, errors } = out();
            jsonProcessOutput(out());
            try {
                await run(o, cmd.optsWithGlobals() as GlobalOptions, log);
            } catch (e) {
                process.exitCode = reportServeError(errors, e);
                // A failed start ends the process: a part it had opened (a store connection, a timer, the
                // listening port of a start that failed late) must not keep it alive without serving.
                // The moment's wait lets the fatal line reach stderr.
                setTimeout(() => process.exit(), FAILED_START_EXIT_MS).unref();
            }
        });
    jsonCommanderErrors(serve, () => out().errors);
}

/** Where the API listens, and how often each of the service's loops runs. */
function listenAndLoopOptions(serve: Command): void {
    serve
        .option("-p, --port <port>", "listen port", process.env.EGRESS_PORT ?? "8080")
        .option(
            "--host <addr>",
            "listen address (loopback by default; opening it is a deliberate choice)",
            process.env.EGRESS_HOST ?? "127.0.0.1",
        )
        .option("--tokens <file>", "tokens file (default .egress/tokens-<stack>.json)")
        .option("--no-converge", "do not run `up` at start")
        .option("--probe-interval <seconds>", "health probe interval (0.1 to 3600)", "10")
        .option(
            "--reconcile-interval <seconds>",
            "self-healing: seconds between reconcile rounds, which repair gone and long-unhealthy members (0 = off, at most 86400)",
            process.env.EGRESS_RECONCILE_INTERVAL ?? "60",
        )
        .option(
            "--autoscale-interval <seconds>",
            "autoscaling (pools with `autoscale`): seconds between samples and decisions (0 = off, at most 3600)",
            process.env.EGRESS_AUTOSCALE_INTERVAL ?? "5",
        )
        .option(
            "--rotate-interval <seconds>",
            "rotation by age (pools with `rotateAfterSeconds`): seconds between rounds (0 = off, at most 3600)",
            process.env.EGRESS_ROTATE_INTERVAL ?? "10",
        )
        .option(
            "--autoscale-window <seconds>",
            "autoscaling: seconds the demand signals are averaged over; a scale-up waits one window above target (1 to 3600)",
            process.env.EGRESS_AUTOSCALE_WINDOW ?? "30",
        )
        .option(
            "--timeline-interval <seconds>",
            "how often the dashboard's last-hour timeline samples healthy and leased counts (1 to 3600)",
            "30",
        )
        .option(
            "--provider-check-interval <seconds>",
            "seconds between provider health checks (cloud API, cluster reachability) (0 = off, at most 86400)",
            process.env.EGRESS_PROVIDER_CHECK_INTERVAL ?? "60",
        )
        .option(
            "--provider-check-timeout <seconds>",
            "how long one provider check may take (1 to 600)",
            process.env.EGRESS_PROVIDER_CHECK_TIMEOUT ?? "30",
        );
}

/** The rotating gateway's doors (HTTP, SOCKS5, TLS, sticky ports), who may use them without credentials, and how it treats members and targets. */
function gatewayOptions(serve: Command): void {
    serve
        .option(
            "--gateway-port <port>",
            "the rotating gateway's port: a forward proxy whose every request leases the next member (0 = off)",
            process.env.EGRESS_GATEWAY_PORT ?? "8888",
        )
        .option(
            "--socks-port <port>",
            "the gateway's SOCKS5 front door (RFC 1928 CONNECT, RFC 1929 login with the gateway's proxy username and token) (0 = off)",
            process.env.EGRESS_SOCKS_PORT ?? "0",
        )
        .option(
            "--gateway-tls-port <port>",
            "the gateway as an HTTPS proxy (clients' --proxy https://…), beside the plain --gateway-port; needs --tls-cert and --tls-key (0 = off)",
            process.env.EGRESS_GATEWAY_TLS_PORT ?? "0",
        )
        .option(
            "--tls-cert <file>",
            "PEM certificate (chain): with --tls-key the API serves HTTPS and --gateway-tls-port can run; both files are read again on SIGHUP",
            process.env.EGRESS_TLS_CERT,
        )
        .option("--tls-key <file>", "PEM private key of --tls-cert (unencrypted)", process.env.EGRESS_TLS_KEY)
        .option(
            "--gateway-host <addr>",
            "the listen address of the gateway's ports (HTTP, SOCKS5, TLS, sticky) (loopback by default)",
            process.env.EGRESS_GATEWAY_HOST ?? "127.0.0.1",
        )
        .option(
            "--gateway-allow <cidr=token[:pool]>",
            "a source range whose gateway requests need no proxy credentials (a browser's --proxy-server carries none): they act as the named token of the tokens file or EGRESS_TOKENS (its scopes, its name in logs) in its pool (default: any); credentials sent still win; nothing, loopback included, unless named; repeatable; also $EGRESS_GATEWAY_ALLOW, comma-separated",
            collect,
        )
        .option(
            "--gateway-sticky-ports <from-to[:pool]>",
            `gateway ports on --gateway-host, each one sticky session (port-<n>) of the pool (default: any), for clients that can send nothing but an address; still needs credentials or --gateway-allow; at most ${MAX_STICKY_PORTS} ports a range; repeatable; also $EGRESS_GATEWAY_STICKY_PORTS, comma-separated`,
            collect,
        )
        .option(
            "--gateway-block-header <name[=text]>",
            "a response header that marks a block by the origin (with =text: when its value contains text); repeatable. 403 and 429 always do",
            collect,
            [],
        )
        .option(
            "--gateway-wait <seconds>",
            "how long a gateway request waits, first come first served, for a member when every one it could use is busy; then 503 with Retry-After (0 = at once, up to 60)",
            process.env.EGRESS_GATEWAY_WAIT ?? "5",
        )
        .option(
            "--target-cooldown <seconds>",
            "how long a proxy rests for a target after a lease or gateway request against it (0 to 3600); a pool's restAfterOkSeconds overrides it",
            process.env.EGRESS_TARGET_COOLDOWN ?? "0",
        );
}

/** The serving state's store, and what replicas sharing it need. */
function storeOptions(serve: Command): void {
    serve
        // No default shown from EGRESS_STORE: --help would print the URL, password and all.
        .option(
            "--store <url>",
            "where the serving state of leases lives: memory (default), redis://[user:pass@]host:port[/db] (rediss:// for TLS) or redis+sentinel://[user:pass@]host:port,host:port,…/<master-name>[/db] (rediss+sentinel://), so a restart, another replica or a Redis failover loses nothing; also $EGRESS_STORE",
        )
        .option(
            "--store-grant-replicas <n>",
            "with --store redis…: Redis replicas that must have a lease grant before it is answered (WAIT); a grant none confirms in 250 ms is withdrawn and answered 503, so a failover never leases a member twice (0 to 5; default 1 with redis+sentinel://, else 0); also $EGRESS_STORE_GRANT_REPLICAS",
            process.env.EGRESS_STORE_GRANT_REPLICAS,
        )
        .option(
            "--advertise-url <url>",
            "with --store redis://…: the URL other replicas reach this one's API at (they forward scale, operation and heal requests to the leader); default: its own listen URL",
            process.env.EGRESS_ADVERTISE_URL,
        )
        .option(
            "--engine-kill-grace <seconds>",
            "with --store redis://…: a leader that loses the stack's lock cancels its engine run; one still running this long after is ended, so another replica can take the stack over (1 to 3600)",
            process.env.EGRESS_ENGINE_KILL_GRACE ?? "30",
        );
}

/** Parses the flags (bad ones exit 2 naming the flag), starts the service, and runs until a signal. */
async function run(o: Record<string, any>, opts: GlobalOptions, log: Logger): Promise<void> {
    const options = serveOptions(o, opts, log);
    // Before the service starts: a signal right after its ready line must not meet the default action.
    const attach = serviceSignals(log);
    const svc = await startService(options);
    attach(svc);
    if (svc.devTokenFile) logDevToken(log, svc, svc.devTokenFile);
    await new Promise(() => undefined); // run until a signal
}

/**
 * The service's options from the flags, each checked in the order the flags are listed; the stack's
 * config is read last (config errors exit 2 before anything starts), as the gateway's doors name its pools.
 */
function serveOptions(o: Record<string, any>, opts: GlobalOptions, log: Logger): ServeOptions {
    const port = Number(o.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new UsageError(`--port must be a port number (got "${o.port}")`);
    const loops = loopIntervals(o);
    const gatewayPorts = gatewayPortFlags(o);
    const targetCooldown = seconds("--target-cooldown", o.targetCooldown, { min: 0, max: 3600 });
    if (o.checkUrl && !/^https?:\/\/[^/]+/.test(o.checkUrl))
        throw new UsageError(`--check-url must be an http:// or https:// URL (got "${o.checkUrl}")`);
    const store = storeSpecOf(o.store);
    const grantReplicas = grantReplicasFlag(o.storeGrantReplicas, store);
    if (o.advertiseUrl && !/^https?:\/\/[^/]+/.test(o.advertiseUrl))
        throw new UsageError(`--advertise-url must be an http:// or https:// URL (got "${o.advertiseUrl}")`);
    if (o.advertiseUrl && store?.kind !== "redis")
        throw new UsageError("--advertise-url needs --store redis://… (replicas share a stack only through a store)");
    const killGrace = seconds("--engine-kill-grace", o.engineKillGrace, { min: 1, max: 3600 });
    const dir = projectDir(opts);
    const config = loadStackConfig(dir, opts.stack); // config errors exit 2 before anything starts
    return {
        projectRoot: dir,
        stack: opts.stack,
        host: o.host,
        port,
        tokensFile: o.tokens,
        converge: o.converge,
        ...loops,
        checkUrl: o.checkUrl,
        gateway: gatewayOf(
            o,
            gatewayPorts,
            port,
            config.pools.map((p) => p.name),
        ),
        tls: gatewayPorts.tls,
        targetCooldownSeconds: targetCooldown,
        store,
        ...(grantReplicas === undefined ? {} : { storeGrantReplicas: grantReplicas }),
        advertiseUrl: o.advertiseUrl,
        engineKillGraceMs: Math.round(killGrace * 1000),
        log,
    };
}

/** The loops' intervals (`--*-interval`, `--autoscale-window`, `--provider-check-timeout`) in milliseconds. */
function loopIntervals(o: Record<string, any>) {
    const interval = seconds("--probe-interval", o.probeInterval, { min: 0.1, max: 3600 });
    const reconcile = seconds("--reconcile-interval", o.reconcileInterval, { min: 1, max: 86_400, off: true });
    const timeline = seconds("--timeline-interval", o.timelineInterval, { min: 1, max: 3600 });
    const autoscale = seconds("--autoscale-interval", o.autoscaleInterval, { min: 0.1, max: 3600, off: true });
    const rotate = seconds("--rotate-interval", o.rotateInterval, { min: 0.1, max: 3600, off: true });
    const autoscaleWindow = seconds("--autoscale-window", o.autoscaleWindow, { min: 1, max: 3600 });
    const providerInterval = seconds("--provider-check-interval", o.providerCheckInterval, {
        min: 1,
        max: 86_400,
        off: true,
    });
    const providerTimeout = seconds("--provider-check-timeout", o.providerCheckTimeout, { min: 1, max: 600 });
    return {
        probeIntervalMs: Math.round(interval * 1000),
        reconcileIntervalMs: Math.round(reconcile * 1000),
        timelineIntervalMs: Math.round(timeline * 1000),
        autoscaleIntervalMs: Math.round(autoscale * 1000),
        autoscaleWindowMs: Math.round(autoscaleWindow * 1000),
        rotateIntervalMs: Math.round(rotate * 1000),
        providerCheckIntervalMs: Math.round(providerInterval * 1000),
        providerCheckTimeoutMs: Math.round(providerTimeout * 1000),
    };
}

/** The gateway's ports (0 = that door off), the certificate its TLS port and the API serve, its wait and block rules. */
function gatewayPortFlags(o: Record<string, any>) {
    const gatewayPort = portFlag("--gateway-port", o.gatewayPort, "no gateway");
    const socksPort = portFlag("--socks-port", o.socksPort, "no SOCKS5");
    const tlsPort = portFlag("--gateway-tls-port", o.gatewayTlsPort, "no TLS port");
    const tls = tlsFlags(o.tlsCert, o.tlsKey, tlsPort);
    const gatewayWait = seconds("--gateway-wait", o.gatewayWait, { min: 0, max: 60 });
    const blockRules = { statuses: [403, 429], headers: (o.gatewayBlockHeader as string[]).map(blockHeader) };
    return { gatewayPort, socksPort, tlsPort, tls, gatewayWait, blockRules };
}

/**
 * The gateway's options, or undefined when every door is off; the allowed sources and sticky ports
 * (flags, else their environment variables) are checked against the stack's pools and the other ports.
 */
function gatewayOf(
    o: Record<string, any>,
    flags: ReturnType<typeof gatewayPortFlags>,
    port: number,
    pools: string[],
): ServeOptions["gateway"] {
    const { gatewayPort, socksPort, tlsPort } = flags;
    const doors = doorFlags(
        listFlag(o.gatewayAllow, process.env.EGRESS_GATEWAY_ALLOW),
        listFlag(o.gatewayStickyPorts, process.env.EGRESS_GATEWAY_STICKY_PORTS),
        pools,
        { "--port": port, "--gateway-port": gatewayPort, "--socks-port": socksPort, "--gateway-tls-port": tlsPort },
    );
    const gatewayOff = gatewayPort === 0 && socksPort === 0 && tlsPort === 0 && doors.stickyPorts.length === 0;
    if (gatewayOff && doors.allow.length)
        throw new UsageError("--gateway-allow needs a gateway door: every gateway port is 0 (off)");
    const on = (p: number) => (p === 0 ? undefined : p);
    return gatewayOff
        ? undefined
        : {
              port: on(gatewayPort),
              socksPort: on(socksPort),
              tlsPort: on(tlsPort),
              host: o.gatewayHost,
              waitMs: flags.gatewayWait * 1000,
              blockRules: flags.blockRules,
              ...doors,
          };
}

/**
 * Where a generated dev token is, and how to try it. The token itself is never logged: log lines travel
 * (journal, shippers) where a 0600 file does not. The person at the terminal reads it from the file, as
 * the README says (docs/decisions/0030-logs.md).
 */
function logDevToken(log: Logger, svc: RunningService, devTokenFile: string): void {
    const token = `$(cat ${devTokenFile})`;
    log.info(
        {
            devTokenFile,
            try: [
                `curl -H "Authorization: Bearer ${token}" ${svc.url}/v1/proxies`,
                ...(svc.gatewayPort
                    ? [`curl -x "http://dev:${token}@127.0.0.1:${svc.gatewayPort}" http://example.org/`]
                    : []),
                ...(svc.socksPort
                    ? [`curl --socks5-hostname "dev:${token}@127.0.0.1:${svc.socksPort}" http://example.org/`]
                    : []),
            ],
        },
        `a dev API token was generated: stored hashed, its plain copy in ${devTokenFile} (mode 0600)`,
    );
}

/**
 * The service's signals, installed before it starts and attached to it once it runs. Installed after
 * start-up, a SIGHUP that came between the ready line and the end of start-up (a `systemctl reload` at
 * once; a loaded machine) met the default action and ended the service. Until the service runs, SIGTERM
 * and SIGINT end the process as they did (by that signal) and SIGHUP is logged.
 * - SIGTERM lets the in-flight operation finish; SIGINT (Ctrl-C) cancels it safely (the engine saves state
 *   and the operation is recorded as interrupted). A second signal stops at once.
 * - SIGHUP reloads the certificate and key (a renewal). Without TLS there is nothing to reload, and a
 *   `systemctl reload` (the unit's ExecReload) must not end the service: it is logged and ignored.
 */
function serviceSignals(log: Logger): (svc: RunningService) => void {
    let svc: RunningService | undefined;
    let stopping = false;
    const stop = (signal: "SIGTERM" | "SIGINT") => {
        if (!svc) {
            process.removeAllListeners(signal);
            return void process.kill(process.pid, signal); // still starting: the default action
        }
        if (stopping) {
            log.warn({ signal }, `${signal} again: stopping at once`);
            return void process.exit(130);
        }
        stopping = true;
        const cancel = signal === "SIGINT";
        log.info(
            { signal, cancel },
            `${signal}: ${cancel ? "cancelling" : "finishing"} the in-flight operation, then stopping (signal again to force)`,
        );
        svc.close({ cancel }).then(
            () => process.exit(0),
            (e) => {
                log.error({ err: e }, "stopping failed");
                process.exit(1);
            },
        );
    };
    process.on("SIGHUP", () => {
        if (!svc) log.info("SIGHUP while starting: nothing to reload yet");
        else if (svc.reloadTls) void svc.reloadTls();
        else log.info("SIGHUP: no TLS certificate to reload; nothing else reloads");
    });
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
    return (running) => (svc = running);
}

/**
 * A repeatable flag's values. A flag without a default stays undefined while unset, so its environment
 * variable applies (listFlag).
 */
const collect = (v: string, all: string[] | undefined) => [...(all ?? []), v];

/** `--store-grant-replicas`: a whole number from 0 to 5, with a Redis store only; unset: the store's default. */
function grantReplicasFlag(raw: string | undefined, store: ReturnType<typeof storeSpecOf>): number | undefined {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (String(raw).trim() === "" || !Number.isInteger(n) || n < 0 || n > 5)
        throw new UsageError(`--store-grant-replicas must be a whole number from 0 to 5 (got "${raw}")`);
    if (store?.kind !== "redis")
        throw new UsageError("--store-grant-replicas needs --store redis://… or redis+sentinel://…");
    return n;
}
