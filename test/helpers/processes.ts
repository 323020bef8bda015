/**
 * egress as separate processes, for tests that kill them: a throwaway project with its own EGRESS_HOME
 * (the real CLI linked in; proc-project.ts), `egress serve` and CLI commands as children, and /proc views
 * of what runs.
 */
import * as cp from "node:child_process";
import * as http from "node:http";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine";
import { after, before } from "node:test";
import { ADMIN_TOKEN, procProject, type ProcProject } from "./proc-project";
import { startPostgres, type TestPostgres } from "./postgres";
import { parseBody, requestOf, waitFor, type CallOptions, type CallResult, type ServiceClient } from "./harness";

export { ADMIN_TOKEN, procProject, type ProcProject } from "./proc-project";
export {
    backendLockFiles,
    engineProcessesOf,
    engineUpdating,
    environOf,
    proxyProcesses,
    wedgeEngine,
} from "./proc-scan";

const CLI = path.join(PACKAGE_ROOT, "dist", "src", "cli.js");

/**
 * The command line of `egress <args>` for `p`: in a UTS namespace of its own named `p.host` when the
 * project is on "another host" (root only, as the tests run: the engine's locks then name that host).
 */
function egressArgv(p: ProcProject, args: string[], entry = CLI): [string, string[]] {
    const argv = [entry, ...args, "--stack", p.stack, "--cwd", p.dir];
    if (!p.host) return [process.execPath, argv];
    // unshare and sh exec in turn: the child's pid is node's.
    const named = 'printf %s "$0" > /proc/sys/kernel/hostname && exec "$@"';
    return ["unshare", ["--uts", "sh", "-c", named, p.host, process.execPath, ...argv]];
}

/** Runs `egress <args>` to completion. */
export function cli(
    p: ProcProject,
    args: string[],
    timeoutMs = 120_000,
): { code: number; stdout: string; stderr: string } {
    const r = cp.spawnSync(...egressArgv(p, args), {
        env: p.env,
        encoding: "utf8",
        timeout: timeoutMs,
    });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs `egress <args>` to completion without blocking this process: for tests whose own servers (an
 * image server, an SSH relay) the command talks to. Killed with SIGKILL after `timeoutMs`.
 */
export async function cliAsync(
    p: ProcProject,
    args: string[],
    timeoutMs = 300_000,
    entry = CLI,
): Promise<{ code: number; stdout: string; stderr: string }> {
    const c = spawnCli(p, args, entry);
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
    const code = await new Promise<number | null>((r) => c.once("exit", r));
    clearTimeout(timer);
    return { code: code ?? -1, stdout, stderr };
}

/** Starts `egress <args>` without waiting (`entry`: another release's cli.js, test/helpers/legacy-release.ts). */
export function spawnCli(p: ProcProject, args: string[], entry = CLI): cp.ChildProcessWithoutNullStreams {
    return cp.spawn(...egressArgv(p, args, entry), { env: p.env });
}

/** `egress serve` as a child process; `call` defaults to the admin token of EGRESS_TOKENS. */
export interface ServeProcess extends ServiceClient {
    child: cp.ChildProcessWithoutNullStreams;
    /** Every line the service wrote, stdout and stderr interleaved as they arrived. */
    logs: string[];
    /** The same lines parsed: every one is a JSON object (a line that is not fails the test, see `jsonLines`). */
    entries: Record<string, any>[];
    /** Resolves when the process has exited and both its streams are read to the end. */
    exited: Promise<number | null>;
}

const running = new Set<cp.ChildProcess>();

/** SIGKILLs every `egress serve` a test started that still runs (for `after` hooks: a failed assertion must not leave one). */
export function killServices(): void {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}

/** Waits until `svc` lists exactly `n` proxies, every one healthy (GET /v1/proxies). */
export async function untilHealthy(svc: ServeProcess, n: number, timeoutMs = 180_000, everyMs = 100): Promise<void> {
    await waitFor(
        `${n} healthy proxies`,
        async () => {
            const px = (await svc.call("GET", "/v1/proxies")).body.proxies as { health: string }[];
            return px.length === n && px.every((x) => x.health === "healthy");
        },
        timeoutMs,
        everyMs,
    );
}

/**
 * The end of a test file of `egress serve` processes (an `after` hook): every service it started killed,
 * then the stack destroyed and the project removed.
 */
export function endProcProject(p: ProcProject | undefined): void {
    killServices();
    if (!p) return;
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
}

/**
 * Splits `stream` into lines, parses each as a JSON object and hands it to `onEntry`. `egress serve`
 * writes nothing but JSON lines (docs/operations.md, "Logs"), so a line that is not one is a bug in the
 * service: it is reported to `onBadLine` (the caller fails), never skipped. A last line without its
 * newline still counts. Resolves when the stream ended.
 */
export function jsonLines(
    stream: NodeJS.ReadableStream,
    name: string,
    onEntry: (entry: Record<string, any>, line: string) => void,
    onBadLine: (e: Error) => void,
): Promise<void> {
    let buf = "";
    const take = (line: string) => {
        if (line === "") return onBadLine(new Error(`egress serve wrote an empty line on ${name}`));
        let o: unknown;
        try {
            o = JSON.parse(line);
        } catch {
            /* judged below */
        }
        if (o === null || typeof o !== "object" || Array.isArray(o))
            return onBadLine(
                new Error(`egress serve wrote a line on ${name} that is not a JSON object: ${JSON.stringify(line)}`),
            );
        onEntry(o as Record<string, any>, line);
    };
    stream.setEncoding("utf8");
    stream.on("data", (d: string) => {
        buf += d;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
            take(buf.slice(0, i));
            buf = buf.slice(i + 1);
        }
    });
    return new Promise((resolve) =>
        stream.once("end", () => {
            if (buf) take(buf);
            resolve();
        }),
    );
}

/**
 * One API call on a fresh connection: a kept-alive socket the server closes while idle (a test spends
 * seconds in CLI checks between calls) would fail the next request for reasons beside the point.
 */
function callFresh(url: string, method: string, route: string, opts: CallOptions): Promise<CallResult> {
    // JSON content-type on every request, a body or not, as these tests have always sent.
    const { headers, body } = requestOf(opts, { token: ADMIN_TOKEN, headers: { "content-type": "application/json" } });
    return new Promise((resolve, reject) => {
        const req = http.request(`${url}${route}`, { method, agent: false, headers }, (res) => {
            let text = "";
            res.setEncoding("utf8")
                .on("data", (d) => (text += d))
                .on("end", () =>
                    resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: parseBody(text) }),
                );
        });
        req.on("error", reject);
        req.end(body);
    });
}

/** node's header record as fetch's `Headers`, the one shape tests read. */
function headersOf(res: http.IncomingMessage): Headers {
    const h = new Headers();
    for (const [k, v] of Object.entries(res.headers)) for (const x of [v ?? []].flat()) h.append(k, x);
    return h;
}

/**
 * Starts `egress serve --port 0` and resolves once it logged "egress service ready". A line on stdout or
 * stderr that is not JSON rejects the start, or, after it, throws where the test runner sees it (an
 * uncaught exception fails the test that is running).
 */
export async function serve(p: ProcProject, extraArgs: string[] = []): Promise<ServeProcess> {
    // No self-healing unless a test asks for it: these tests kill things on purpose and check what follows.
    // No gateway either: its default port 8888 is one for the whole machine, and tests run side by side.
    const child = spawnCli(p, [
        "serve",
        "--port",
        "0",
        "--probe-interval",
        "1",
        "--reconcile-interval",
        "0",
        "--gateway-port",
        "0",
        ...extraArgs,
    ]);
    running.add(child);
    child.once("exit", () => running.delete(child));
    const logs: string[] = [];
    const entries: Record<string, any>[] = [];
    let starting: ((e: Error) => void) | undefined;
    const bad = (e: Error) => {
        if (starting) return starting(new Error(`${e.message}\nservice log so far:\n${logs.join("\n")}`));
        process.nextTick(() => {
            throw e;
        });
    };
    let ready: ((url: string) => void) | undefined;
    const onEntry = (o: Record<string, any>, line: string) => {
        logs.push(line);
        entries.push(o);
        if (o.msg === "egress service ready") ready?.(o.url);
    };
    const streams = Promise.all([
        jsonLines(child.stdout, "stdout", onEntry, bad),
        jsonLines(child.stderr, "stderr", onEntry, bad),
    ]);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => void streams.then(() => r(code))));
    const url = await new Promise<string>((resolve, reject) => {
        ready = resolve;
        starting = reject;
        exited.then((code) =>
            reject(new Error(`egress serve exited with ${code} before it was ready:\n${logs.join("\n")}`)),
        );
    });
    starting = undefined;
    const call = (method: string, route: string, opts: CallOptions = {}) =>
        callFresh(url, method, route, opts).catch((e: Error) => {
            const logged = logs.slice(-15).join("\n");
            throw new Error(`${method} ${route}: ${e.message}; service (exit ${child.exitCode}) logged:\n${logged}`);
        });
    return { child, url, logs, entries, call, exited };
}

/** `wait`, or its failure with the service's last 40 log lines (request lines left out): what it was doing. */
export function withServiceLogs<T>(svc: ServeProcess, wait: Promise<T>): Promise<T> {
    return wait.catch((e: Error) => {
        const lines = svc.logs.filter((l) => !l.includes('"request completed"')).slice(-40);
        throw new Error(`${e.message}; the service logged:\n${lines.join("\n")}`);
    });
}

/**
 * For one test file (its `before` and `after` are registered here): a process project whose state lives
 * on a fresh PostgreSQL of its own. Afterwards the services are killed, PostgreSQL is started again if a
 * test left it down (destroy needs it), the stack is destroyed and both are removed.
 */
export function postgresProject(name: string, config: object): { pg: TestPostgres; p: ProcProject } {
    const fx = {} as { pg: TestPostgres; p: ProcProject };
    before(async () => {
        fx.pg = await startPostgres();
        fx.p = procProject(name, config, { PULUMI_BACKEND_URL: fx.pg.url });
    });
    after(async () => {
        killServices();
        await fx.pg?.start().catch(() => undefined);
        if (fx.p) {
            cli(fx.p, ["destroy", "--yes", "--quiet"]);
            fx.p.cleanup();
        }
        await fx.pg?.cleanup();
    });
    return fx;
}
