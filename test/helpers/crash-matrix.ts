/**
 * The crash matrix, one body for every Pulumi backend: SIGKILL of `egress serve` at six moments of a 0→15
 * `up` and of a 15→3 `up`, and of a CLI `egress up` at three moments. After each kill: no engine process of
 * the dead run is left; a restart converges; the proxy processes are exactly the stack outputs; `egress gc`
 * finds nothing; no lock (file or row) is left. Recovery times are printed as a table (docs/bench.md quotes
 * them). test/e2e/crash-matrix.test.ts runs it on the file backend, crash-matrix-postgres.test.ts on a real
 * PostgreSQL.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import {
    killServices,
    cli,
    engineProcessesOf,
    engineUpdating,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    ServeProcess,
    spawnCli,
} from "./processes";
import type { StateBackend } from "./backends";
import { settled, waitFor } from "./harness";

/**
 * How long an update may take to reach a kill's moment. Not what the matrix checks (that is recovery), so
 * it is generous: a CLI `up` previews before it creates, and a CI run with three matrices at once (and
 * anything else on the machine) took over 60 s to its 7th create.
 */
const MOMENT_MS = 180_000;

/** Where the matrix's stack keeps its Pulumi state (backends.ts), and which of its cases run there. */
export interface MatrixBackend extends StateBackend {
    /** Which of the six service moments (0–5, each both ways) and of the three CLI moments (0–2) run; default all. */
    serviceMoments?: number[];
    cliMoments?: number[];
    /** Whether the "CLI `up` right after a killed service" case runs; default true. */
    cliAfterKill?: boolean;
}

/**
 * Registers the matrix's tests (and its before/after) in the calling test file. With `membersPerStack`,
 * the pool spreads its members over shard stacks (src/engine/fleet-driver.ts): the kills then land in
 * runs on shards, and every check reads every stack.
 */
export function crashMatrix(backend: MatrixBackend, pool: { membersPerStack?: number } = {}): void {
    const POOL = "c";
    const config = {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: POOL, provider: "local", replicas: 0, maxReplicas: 20, ...pool }],
    };
    let p: ProcProject;
    let stopBackend: (() => Promise<void>) | undefined;
    const timings: string[] = [];
    /** Recovery log lines about pending creates: proof the undo ran, not just that things happened to line up. */
    const undone: string[] = [];

    const serviceMoments = backend.serviceMoments ?? [0, 1, 2, 3, 4, 5];
    const cliMoments = backend.cliMoments ?? [0, 1, 2];
    const cliAfterKill = backend.cliAfterKill ?? true;

    before(async () => {
        const started = await backend.start();
        stopBackend = started.stop;
        p = procProject("crash", config, started.env);
    });
    after(async () => {
        killServices();
        if (p) {
            cli(p, ["destroy", "--yes", "--quiet"]);
            assert.deepEqual([...proxyProcesses(p).keys()], [], "destroy leaves no proxy running");
            p.cleanup();
        }
        await stopBackend?.();
    });

    /** Everything that must hold once the stack is converged at `n` members. */
    function assertConsistent(n: number, label: string): void {
        const outputs = JSON.parse(cli(p, ["outputs", "--json"]).stdout).proxies as { id: string; port: number }[];
        assert.equal(outputs.length, n, `${label}: outputs list ${n} members`);
        const running = proxyProcesses(p);
        assert.deepEqual(
            [...running.keys()].sort(),
            outputs.map((o) => `${p.stack}-${o.id}`).sort(),
            `${label}: proxy processes = outputs`,
        );
        const gc = cli(p, ["gc", "--json"]);
        assert.equal(gc.code, 0, `${label}: gc runs (${gc.stderr})`);
        assert.deepEqual(JSON.parse(gc.stdout).orphans, [], `${label}: gc finds nothing`);
        assert.deepEqual(backend.locks(p), [], `${label}: no lock is left in the ${backend.name} backend`);
    }

    /** Waits (bounded) until no engine process of the dead egress process remains. */
    async function engineGoneWithin(ownerPid: number, label: string): Promise<number> {
        const t0 = Date.now();
        await waitFor(
            `${label}: engine processes of dead pid ${ownerPid} to end (left: ${JSON.stringify(engineProcessesOf(ownerPid).map(({ pid, command }) => ({ pid, command })))})`,
            () => engineProcessesOf(ownerPid).length === 0,
            10_000,
            25,
        );
        return Date.now() - t0;
    }

    /** Starts the service and waits for its start-up convergence; returns it with the recovery times. */
    async function restart(label: string): Promise<{ svc: ServeProcess; readyMs: number; convergedMs: number }> {
        const t0 = Date.now();
        const svc = await serve(p);
        const readyMs = Date.now() - t0;
        const ops = (await svc.call("GET", "/v1/operations")).body.operations as {
            id: string;
            kind: string;
            createdAt: string;
        }[];
        const converge = ops.filter((o) => o.kind === "up").sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
        assert.ok(converge, `${label}: the restart converges`);
        assert.equal((await settled(svc, converge.id)).status, "succeeded", `${label}: start-up convergence succeeded`);
        return { svc, readyMs, convergedMs: Date.now() - t0 };
    }

    async function stopGracefully(svc: ServeProcess): Promise<void> {
        svc.child.kill("SIGTERM");
        await svc.exited;
    }

    /** A moment of an operation: the kill comes once `reached()` is true. */
    type Moment = { name: string; reached: (ownerPid: number) => boolean };

    /**
     * The service the last case recovered with, still running: the next case starts from it. Stopping it
     * and starting another would only repeat a start-up convergence that the case just checked (about a
     * fifth of each case's time); the last case stops it gracefully.
     */
    let recovered: ServeProcess | undefined;

    async function killServiceDuring(from: number, to: number, moment: Moment): Promise<void> {
        const label = `serve ${from}→${to} @ ${moment.name}`;
        let svc = recovered ?? (await restart(`${label} (setup)`)).svc;
        recovered = undefined;
        if (proxyProcesses(p).size !== from) {
            const op = (await svc.call("PUT", `/v1/pools/${POOL}/replicas`, { body: { replicas: from } })).body
                .operation;
            assert.equal((await settled(svc, op.id)).status, "succeeded");
        }
        assertConsistent(from, `${label} (before)`);
        const r = await svc.call("PUT", `/v1/pools/${POOL}/replicas`, { body: { replicas: to } });
        assert.equal(r.status, 202);
        const pid = svc.child.pid!;
        await waitFor(`${label}: the moment`, () => moment.reached(pid), MOMENT_MS, 5);
        svc.child.kill("SIGKILL");
        await svc.exited;
        const engineMs = await engineGoneWithin(pid, label);
        const again = await restart(label);
        svc = again.svc;
        undone.push(...again.svc.logs.filter((l) => l.includes("pending create of")));
        assertConsistent(to, label);
        timings.push(`| ${label} | ${engineMs} | ${again.readyMs} | ${again.convergedMs} |`);
        recovered = svc;
    }

    test(
        `${backend.name} backend: SIGKILL of the service at ${serviceMoments.length} moments of a 0→15 up and of a 15→3 up`,
        { timeout: 30 * 60_000 },
        async () => {
            const atLeast = (k: number) => () => proxyProcesses(p).size >= k;
            const atMost = (k: number) => () => proxyProcesses(p).size <= k;
            const started = (what: string): Moment => ({
                name: `engine started, nothing ${what}`,
                reached: engineUpdating,
            });
            const upMoments = [
                started("created"),
                ...[1, 3, 7, 11, 14].map((k): Moment => ({ name: `${k} created`, reached: atLeast(k) })),
            ];
            const downMoments = [
                started("deleted"),
                ...[1, 3, 6, 9, 11].map((k): Moment => ({ name: `${k} deleted`, reached: atMost(15 - k) })),
            ];
            for (const i of serviceMoments) {
                await killServiceDuring(0, 15, upMoments[i]);
                await killServiceDuring(15, 3, downMoments[i]);
            }
            if (recovered) await stopGracefully(recovered);
            recovered = undefined;
        },
    );

    // A file that runs a part of the matrix registers only the cases of its part.
    if (cliMoments.length)
        test(
            `${backend.name} backend: SIGKILL of a CLI \`egress up\` at ${cliMoments.length} moments`,
            { timeout: 20 * 60_000 },
            async () => {
                for (const k of cliMoments.map((i) => [1, 7, 13][i])) {
                    const label = `cli up 0→15 @ ${k} created`;
                    p.setReplicas(POOL, 0);
                    assert.equal(cli(p, ["up", "--quiet"]).code, 0);
                    p.setReplicas(POOL, 15);
                    const up = spawnCli(p, ["up", "--quiet"]);
                    const exited = new Promise((r) => up.once("exit", r));
                    await waitFor(`${label}: the moment`, () => proxyProcesses(p).size >= k, MOMENT_MS, 5);
                    up.kill("SIGKILL");
                    await exited;
                    const engineMs = await engineGoneWithin(up.pid!, label);
                    const t0 = Date.now();
                    const again = cli(p, ["up", "--quiet"]);
                    assert.equal(again.code, 0, `${label}: the next up converges (${again.stderr})`);
                    assertConsistent(15, label);
                    timings.push(`| ${label} | ${engineMs} | - | ${Date.now() - t0} |`);
                }
            },
        );

    if (cliAfterKill)
        test(
            `${backend.name} backend: a CLI \`up\` right after a killed service finishes the pending creates first; the restarted service then stops nothing that runs`,
            { timeout: 10 * 60_000 },
            async () => {
                let { svc } = await restart("cli after kill (setup)");
                const down = (await svc.call("PUT", `/v1/pools/${POOL}/replicas`, { body: { replicas: 0 } })).body
                    .operation;
                assert.equal((await settled(svc, down.id)).status, "succeeded");
                await svc.call("PUT", `/v1/pools/${POOL}/replicas`, { body: { replicas: 12 } });
                await waitFor("5 proxies to run", () => proxyProcesses(p).size >= 5, MOMENT_MS, 5);
                svc.child.kill("SIGKILL");
                await svc.exited;
                p.setReplicas(POOL, 6);
                const up = cli(p, ["up", "--quiet"]);
                assert.equal(up.code, 0, up.stderr);
                assert.match(
                    up.stderr,
                    /pending create of .*: stopped local proxy/,
                    "the CLI's up undid the dead run's pending creates itself",
                );
                const before = proxyProcesses(p);
                assert.equal(before.size, 6);
                svc = (await restart("cli after kill")).svc;
                assert.deepEqual(proxyProcesses(p), before, "the restart replaced no member the CLI recorded");
                assert.ok(!svc.logs.some((l) => l.includes("stopped local proxy")), "and stopped none");
                assertConsistent(6, "cli after kill");
                await stopGracefully(svc);
            },
        );

    test(`${backend.name} backend: recovery times`, () => {
        const table = [
            "| case | engine gone after kill (ms) | restart → ready (ms) | restart → converged (ms) |",
            "|---|---|---|---|",
            ...timings,
        ].join("\n");
        console.log(`${backend.name} backend\n${table}`);
        const cases = 2 * serviceMoments.length + cliMoments.length;
        assert.equal(timings.length, cases, `every case of the matrix ran (${cases})`);
        console.log(`recovery undid ${undone.length} pending create(s), e.g. ${undone[0] ?? "-"}`);
        assert.ok(
            undone.some((l) => l.includes("stopped local proxy")),
            "at least one kill left a pending create whose proxy recovery stopped",
        );
    });
}
