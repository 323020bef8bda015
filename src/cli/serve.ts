import type { Command } from "commander";
import type { Logger } from "pino";
import { UsageError, GlobalOptions, projectDir, seconds } from "./context";
import { loadStackConfig } from "../config";
import { type RunningService, type ServeOptions, startService } from "../service";
import { storeSpecOf } from "./store-lock";
import { blockHeader, doorFlags, listFlag, portFlag, tlsFlags } from "./serve-flags";
import { declareServeFlags } from "./serve-options";
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
    declareServeFlags(serve);
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

/** Parses the flags (bad ones exit 2 naming the flag), starts the service, and runs until a signal. */
async function run(o: Record<string, any>, opts: GlobalOptions, log: Logger): Promise<void> {
    const options = serveOptions(o, opts, log);
    // Before the service starts: a signal right after its ready line must not meet the default action.
    const attach = serviceSignals(log);
    // The service (express, the gateway, the store clients) is loaded here, by its entry's startService,
    // not at the top: it is a third of the CLI's start-up, and no other command needs it.
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
