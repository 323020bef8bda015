import pino, { type Logger } from "pino";
import { kindOf } from "../../components/registry";
import { loadStackConfig } from "../config";
import { EngineError, type OperationResult, type ProgressEvent, type StackDriver } from "../engine";
import { credentialsOf, type StackCredentials } from "../model";
import { probeThroughProxy, startLoopbackEcho } from "../probes";
import { HEALTHY_TIMEOUT_MS } from "../fleet-ops/healthy";
import { replaceTargeted } from "../fleet-ops/replace";
import { NoRoomToRollError } from "../fleet-ops/rolling/plan";
import { runRolling } from "../fleet-ops/rolling/run";
import { UsageError } from "./context";

/** One pool's rolling change as `egress up --json` reports it. */
export interface RolledPool {
    pool: string;
    /** The pool's count, kept throughout. */
    replicas: number;
    /** Members that stood in above `replicas` while the others were replaced (gone again at the end). */
    surge: string[];
    /** The members each batch replaced, in order (batch 1 first). */
    batches: string[][];
}

export interface RollOptions {
    projectRoot: string;
    stack: string;
    /** Probed through every new member; default: a loopback echo this process serves (local proxies only). */
    checkUrl?: string;
    /** How long a surge member or a replacement may take to pass a probe. @default HEALTHY_TIMEOUT_MS */
    healthTimeoutMs?: number;
    /** The final plain `up`'s refresh (`--no-refresh`). */
    refresh?: boolean;
    onProgress(e: ProgressEvent): void;
    /** Aborted by Ctrl-C (operations.ts cancellable): the roll starts no new step, removes its surge, throws. */
    signal: AbortSignal;
}

/** Per probe: a member that does not answer in this time counts as not healthy yet. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * `egress up` of an update that replaces members (their port, image, cloud-init … changed): the service's
 * rolling change (src/fleet-ops/rolling/run.ts), run by the CLI. The differences are the CLI's
 * own: the surge count lives in the driver (`setPoolCounts`), never in the stack file, so the tree stays
 * as the person left it whatever happens; there are no leases, so nothing drains; health is this
 * process probing the new members itself (src/probes) until each passed once. Returns undefined when
 * nothing is replaced (the caller runs its plain `up`); a stack without members pays no preview.
 */
export async function rollUp(
    driver: StackDriver,
    o: RollOptions,
): Promise<(OperationResult & { rolling: RolledPool[] }) | undefined> {
    if (!(await driver.membersInState()).length) return undefined;
    const started = Date.now();
    const log = warningsOnStderr();
    const rolled = new Map<string, RolledPool>();
    let replaced: string[] = [];
    let surge: Record<string, number> = {};
    let echo: ReturnType<typeof startLoopbackEcho> | undefined;
    const checkUrl = async () => o.checkUrl ?? (await (echo ??= startLoopbackEcho())).url;
    if (!o.checkUrl) warnRemote(o);
    try {
        const applied = await runRolling(
            {
                driver,
                projectRoot: o.projectRoot,
                stack: o.stack,
                log,
                progress: o.onProgress,
                record: (r) => {
                    const pool = rolled.get(r.pool) ?? {
                        pool: r.pool,
                        replicas: r.replicas,
                        surge: r.surge,
                        batches: [],
                    };
                    pool.batches[r.batch - 1] = r.members;
                    rolled.set(r.pool, pool);
                    replaced = r.replaced;
                },
                surgeTo: (pool, count) => driver.setPoolCounts((surge = { ...surge, [pool]: count })),
                waitHealthy: async (ids, _after, signal) =>
                    probeUntilHealthy(driver, ids, await checkUrl(), o.healthTimeoutMs ?? HEALTHY_TIMEOUT_MS, signal),
                replace: (batch) => {
                    if (o.signal.aborted) throw o.signal.reason as Error; // Ctrl-C just now: no new engine run
                    return replaceTargeted(driver, batch, log, { refresh: false, onProgress: o.onProgress });
                },
                // No leases outside the service: nothing to drain before the surge goes.
                drainTo: async () => driver.setPoolCounts((surge = {})),
                refresh: o.refresh,
            },
            o.signal,
        );
        if (!applied) return undefined;
        return {
            kind: "up",
            changes: applied.changes,
            durationMs: Date.now() - started,
            proxies: applied.proxies,
            rolling: [...rolled.values()],
        };
    } catch (e) {
        if (e instanceof EngineError) throw e; // its own exit code (interrupted, backend down); the surge went
        // The plan refused (a pool with no room to roll): nothing touched, the person must change the config.
        if (e instanceof NoRoomToRollError) throw new UsageError(e.message);
        // Failed before the roll began (its preview: a passphrase that cannot open the salt, a backend
        // error …): nothing touched, and the error keeps its own type and exit code.
        if (!rolled.size) throw e;
        throw new Error(
            `the rolling change stopped: ${(e as Error).message}. Replaced: ${replaced.join(", ") || "none"}; ` +
                "the surge members are gone again and the other members keep their old config; fix the cause and run `egress up` again (or `--all-at-once`)",
        );
    } finally {
        driver.setPoolCounts({});
        if (echo) await (await echo).close();
    }
}

/**
 * Probes each of `ids` (as state lists them: a targeted update leaves the stack output behind) through
 * its proxy every 250 ms until each passed once (the service's first-success rule, src/probes/state.ts);
 * throws past `timeoutMs` naming who did not and why, or when `signal` aborts.
 */
async function probeUntilHealthy(
    driver: StackDriver,
    ids: readonly string[],
    checkUrl: string,
    timeoutMs: number,
    signal: AbortSignal,
): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const pending = new Set(ids);
    const why = new Map<string, string>();
    let credentials: StackCredentials | undefined;
    for (;;) {
        if (signal.aborted) throw signal.reason as Error;
        const members = (await driver.membersInState()).filter((m) => pending.has(m.id));
        if (!credentials && members.some((m) => m.auth)) credentials = await driver.credentials();
        await Promise.all(
            members.map(async (m) => {
                const proxyAuth = credentials && credentialsOf(credentials, m);
                const r = await probeThroughProxy({
                    proxyHost: m.host,
                    proxyPort: m.port,
                    proxyTls: m.url.startsWith("https://"),
                    checkUrl,
                    timeoutMs: PROBE_TIMEOUT_MS,
                    ...(proxyAuth ? { proxyAuth } : {}),
                });
                if (r.ok) pending.delete(m.id);
                else why.set(m.id, r.error ?? `answered ${r.status}`);
            }),
        );
        if (!pending.size) return;
        if (Date.now() > deadline)
            throw new Error(
                `${[...pending].map((id) => `${id} (${why.get(id) ?? "not in state"})`).join(", ")} did not pass a health probe within ${Math.round(timeoutMs / 1000)} s`,
            );
        await new Promise((r) => setTimeout(r, 250));
    }
}

/** The default check URL is loopback: proxies on other machines cannot reach it, and their roll would time out. */
function warnRemote(o: RollOptions): void {
    const providers = loadStackConfig(o.projectRoot, o.stack).providers;
    const remote = Object.entries(providers)
        .filter(([, e]) => !kindOf(e).onThisMachine)
        .map(([n]) => n);
    if (remote.length)
        o.onProgress({
            at: new Date().toISOString(),
            kind: "diagnostic",
            severity: "warning",
            message: `members of ${remote.join(", ")} are probed through a loopback URL they cannot reach; pass --check-url with a URL the proxies can reach`,
        });
}

/** The roll's log (engine retries while the stack is locked or the backend is down) as warning lines; its info lines are progress. */
function warningsOnStderr(): Logger {
    return pino(
        { level: "warn", base: undefined, timestamp: false },
        {
            write: (line: string) => {
                const o = JSON.parse(line) as { msg?: string; error?: string };
                process.stderr.write(`  warning: ${o.msg ?? ""}${o.error ? ` (${o.error})` : ""}\n`);
            },
        },
    );
}
