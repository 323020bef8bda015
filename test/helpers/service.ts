import * as fs from "node:fs";
import * as path from "node:path";
import { tempProject } from "./project";
import { startService, RunningService, ServeOptions } from "../../src/service/start/server";
import { createLogger } from "../../src/log/logger";
import { sha256 } from "../../src/service/http/auth";
import { dropEngineDisconnectsAsTheServiceDoes } from "./engine-disconnects";
import {
    parseBody,
    requestOf,
    settled,
    sleep,
    waitFor,
    type CallOptions,
    type CallResult,
    type ServiceClient,
} from "./harness";

/** Tokens with different scopes, stored hashed in the project's tokens file. */
export const TOKENS = {
    admin: "tok-admin-0123456789abcdef",
    discover: "tok-discover-0123456789abcd",
    lease: "tok-lease-0123456789abcdef01",
    scale: "tok-scale-0123456789abcdef01",
};

/** One local pool with no members (0 of at most 2): a service with nothing to provision, for tests of its HTTP surface. */
export const EMPTY_LOCAL_POOL = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 0, maxReplicas: 2 }],
};

/** The service in this process; `call` defaults to the admin token of TOKENS. */
export type TestService = RunningService &
    ServiceClient & {
        project: ReturnType<typeof tempProject>;
        runDir: string;
        logs: string[];
        restart(extra?: Partial<ServeOptions>): Promise<void>;
        /** Stops the service only (the project, its state and proxies stay): a crash, as far as the next start can tell. */
        stop(): Promise<void>;
    };

/** The tokens file's entries for TOKENS: each token with the one scope its name says. */
export function tokenEntries(): { name: string; sha256: string; scopes: string[] }[] {
    const scopes: Record<keyof typeof TOKENS, string[]> = {
        admin: ["admin"],
        discover: ["discover"],
        lease: ["lease"],
        scale: ["scale"],
    };
    return Object.entries(TOKENS).map(([name, t]) => ({
        name,
        sha256: sha256(t).toString("hex"),
        scopes: scopes[name as keyof typeof TOKENS],
    }));
}

/**
 * Boots the real service on a throwaway project: real engine, real local proxies, real HTTP on
 * 127.0.0.1, logs captured (and checked for leaked tokens by the tests).
 */
export async function startTestService(config: object, extra: Partial<ServeOptions> = {}): Promise<TestService> {
    dropEngineDisconnectsAsTheServiceDoes();
    const project = tempProject("svc", config);
    const runDir = path.join(project.dir, "run");
    const tokensFile = path.join(project.dir, "tokens.json");
    fs.writeFileSync(tokensFile, JSON.stringify({ tokens: tokenEntries() }));
    const logs: string[] = [];
    const log = createLogger({ level: "debug", destination: { write: (s: string) => void logs.push(s) } });
    const options: ServeOptions = {
        projectRoot: project.dir,
        stack: "svc",
        port: 0,
        tokensFile,
        engineEnv: project.env,
        runDir,
        log,
        probeIntervalMs: 300,
        providerCheckIntervalMs: 1000,
        // Self-healing off unless a test turns it on (test/service/heal.test.ts): tests that kill a proxy
        // to watch it turn unhealthy must not see it repaired under them.
        reconcileIntervalMs: 0,
        ...extra,
    };
    let svc = await startService(options);
    const t: TestService = Object.assign(Object.create(null), {
        project,
        runDir,
        logs,
        async call(method: string, route: string, opts: CallOptions = {}): Promise<CallResult> {
            const { headers, body } = requestOf(opts, { token: TOKENS.admin });
            const res = await fetch(`${svc.url}${route}`, { method, headers, body });
            return { status: res.status, headers: res.headers, body: parseBody(await res.text()) };
        },
        async restart(more: Partial<ServeOptions> = {}) {
            await stop();
            svc = await startService({ ...options, ...more });
            stopped = false;
            Object.assign(t, svc, { close });
        },
        stop: () => stop(),
    });
    Object.assign(t, svc);
    let stopped = false;
    const stop = async () => {
        if (!stopped) await svc.close();
        stopped = true;
    };
    const close = async () => {
        await stop();
        await project.driver.destroy().catch(() => undefined);
        project.cleanup();
    };
    t.close = close;
    return t;
}

/** Waits for the `up` the service queues at start (converge) and returns it settled. */
export async function settledConverge(svc: TestService): Promise<any> {
    const first = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations[0];
    return settled(svc, first.id);
}

/** Waits for the start-up convergence and fails with its error (not a bare "failed") unless it succeeded. */
export async function convergedOk(svc: TestService): Promise<void> {
    const op = await settledConverge(svc);
    if (op.status !== "succeeded")
        throw new Error(`the start-up convergence ${op.status}: ${op.error ?? JSON.stringify(op)}`);
}

/** The ids of the proxies the service lists healthy, sorted. */
export async function healthyIds(svc: TestService): Promise<string[]> {
    const r = await svc.call("GET", "/v1/proxies?state=healthy", { token: TOKENS.discover });
    return (r.body.proxies as { id: string }[]).map((p) => p.id).sort();
}

/** Waits until the service lists `n` healthy proxies (its probes have run), at most 30 s. */
export async function waitHealthy(svc: TestService, n: number): Promise<void> {
    await waitFor(
        `${n} healthy`,
        async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === n,
        30_000,
    );
}

/** GET /v1/pools' entry for pool `name`. */
export async function poolView(svc: TestService, name: string): Promise<any> {
    const r = await svc.call("GET", "/v1/pools", { token: TOKENS.discover });
    // Say what came instead of pools (a CI run once failed on a bare TypeError here).
    if (!Array.isArray(r.body?.pools))
        throw new Error(`GET /v1/pools answered ${r.status} without pools: ${JSON.stringify(r.body).slice(0, 500)}`);
    return r.body.pools.find((p: any) => p.name === name);
}

/** Member id → proxy URL, as GET /v1/proxies lists them (a replaced local member has a new port). */
export async function proxyUrls(svc: TestService, pool?: string): Promise<Map<string, string>> {
    const route = `/v1/proxies${pool ? `?pool=${encodeURIComponent(pool)}` : ""}`;
    const proxies = (await svc.call("GET", route, { token: TOKENS.discover })).body.proxies as any[];
    return new Map(proxies.map((p) => [p.id, p.url]));
}

/**
 * Samples pool `name` every `everyMs` until `stop()`: its healthy and actual counts (a rotation's or a
 * rolling change's capacity), `check` run on each view (its assertion failures reject `stop()`).
 */
export function samplePool(
    svc: TestService,
    name: string,
    o: { everyMs?: number; check?: (pool: any) => void } = {},
): { stop(): Promise<{ healthy: number[]; actual: number[] }> } {
    const out = { healthy: [] as number[], actual: [] as number[] };
    let sampling = true;
    const loop = (async () => {
        while (sampling) {
            const p = await poolView(svc, name);
            out.healthy.push(p.healthy);
            out.actual.push(p.actual);
            o.check?.(p);
            await sleep(o.everyMs ?? 250);
        }
    })();
    return {
        async stop() {
            sampling = false;
            await loop;
            return out;
        },
    };
}

/** Names of the resources the engine started a step on during operation `opId`, each once, in order (its SSE events). */
export async function steppedOn(svc: TestService, opId: string): Promise<string[]> {
    const text = await fetch(`${svc.url}/v1/operations/${opId}/events`, {
        headers: { authorization: `Bearer ${TOKENS.scale}` },
    }).then((r) => r.text());
    const events = text
        .split("\n\n")
        .filter((b) => b.startsWith("event: progress"))
        .map((b) => JSON.parse(/^data: (.*)$/m.exec(b)![1]));
    return [...new Set(events.filter((e) => e.kind === "resource-start").map((e) => e.name as string))];
}
