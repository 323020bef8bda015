/**
 * Pulumi state in a real PostgreSQL 15 (Pulumi's DIY postgres:// backend), through every egress path
 * that reads it: the CLI's up/scale/outputs/refresh/gc/destroy, recovery after `kill -9` of an `up`
 * mid-create (its lock row and pending creates), the service's stack watch (polled, not fs.watch), an
 * unreachable server (exit 75, transient), and the URL's password kept out of every child but the engine.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { startPostgres, TestPostgres } from "../helpers/postgres";
import { freeLoopbackPort } from "../helpers/net";
import {
    cli,
    engineProcessesOf,
    environOf,
    killServices,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    spawnCli,
} from "../helpers/processes";
import { settled, waitFor } from "../helpers/harness";

const POOL = "p";
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: POOL, provider: "local", replicas: 2, maxReplicas: 20 }],
};
let pg: TestPostgres;
let p: ProcProject;

before(async () => {
    pg = await startPostgres();
    p = procProject("pgs", config, { PULUMI_BACKEND_URL: pg.url, EGRESS_STATE_HISTORY: "3" });
});
after(async () => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
    await pg.cleanup();
});

/** Keys of the backend's rows under `.pulumi/<what>/` for this project. */
const keys = (what: string) =>
    pg
        .sql(`SELECT key FROM pulumi_state WHERE key LIKE 'postgres/.pulumi/${what}/%' ORDER BY key`)
        .split("\n")
        .filter(Boolean);

function assertConsistent(n: number, label: string): void {
    const out = cli(p, ["outputs", "--json"]);
    assert.equal(out.code, 0, `${label}: outputs (${out.stderr})`);
    const outputs = JSON.parse(out.stdout).proxies as { id: string }[];
    assert.equal(outputs.length, n, `${label}: outputs list ${n} members`);
    assert.deepEqual(
        [...proxyProcesses(p).keys()].sort(),
        outputs.map((o) => `${p.stack}-${o.id}`).sort(),
        `${label}: proxy processes = outputs`,
    );
    const gc = cli(p, ["gc", "--json"]);
    assert.equal(gc.code, 0, `${label}: gc runs (${gc.stderr})`);
    assert.deepEqual(JSON.parse(gc.stdout).orphans, [], `${label}: gc finds nothing`);
    assert.deepEqual(keys("locks"), [], `${label}: no lock row is left`);
}

test("up, scale, outputs, refresh, gc and destroy keep the stack's state in PostgreSQL", { timeout: 300_000 }, () => {
    // --backend as well as PULUMI_BACKEND_URL: the first run names it on the command line only.
    const { PULUMI_BACKEND_URL: _url, ...withoutUrl } = p.env;
    const up = cli({ ...p, env: withoutUrl }, ["up", "--quiet", "--backend", pg.url]);
    assert.equal(up.code, 0, up.stderr);
    assert.ok(!up.stderr.includes(pg.password), "the CLI prints no backend password");
    assert.deepEqual(
        keys("stacks"),
        ["postgres/.pulumi/stacks/egress/pgs.json.gz", "postgres/.pulumi/stacks/egress/pgs.json.gz.bak"],
        "the checkpoint is a gzip row in the table (and the backend's `.bak` of the one before)",
    );
    assert.ok(!fs.existsSync(path.join(p.backendDir, ".pulumi")), "nothing went to a file backend");
    assertConsistent(2, "up 2");
    const scale = cli(p, ["scale", POOL, "3"]);
    assert.equal(scale.code, 0, scale.stderr);
    assertConsistent(3, "scale 3");
    // A proxy dies behind egress's back: refresh notices it, the next up recreates it.
    const [victim] = [...proxyProcesses(p).values()];
    process.kill(victim, "SIGKILL");
    const refresh = cli(p, ["refresh", "--quiet"]);
    assert.equal(refresh.code, 0, refresh.stderr);
    assert.equal(cli(p, ["up", "--quiet"]).code, 0);
    assertConsistent(3, "refresh + up");
    // Bounded growth: backups are off, history keeps EGRESS_STATE_HISTORY=3 updates (2 rows each).
    assert.deepEqual(keys("backups"), [], "no backup rows");
    const history = keys("history");
    assert.equal(history.length, 6, `history is pruned to 3 updates: ${history.join(", ")}`);
    const destroy = cli(p, ["destroy", "--yes", "--quiet"]);
    assert.equal(destroy.code, 0, destroy.stderr);
    assert.equal(proxyProcesses(p).size, 0, "destroy leaves no proxy running");
    assert.deepEqual(keys("locks"), []);
});

test("an unreachable PostgreSQL fails as transient: exit 75, a clear message, no password", async () => {
    const down = pg.url.replace(`:${pg.port}/`, `:${await freeLoopbackPort()}/`);
    for (const args of [
        ["outputs", "--json"],
        ["up", "--quiet"],
    ]) {
        const r = cli({ ...p, env: { ...p.env, PULUMI_BACKEND_URL: down } }, args);
        assert.equal(r.code, 75, `${args[0]}: exit 75 (${r.stdout}${r.stderr})`);
        assert.match(
            r.stdout + r.stderr,
            /Pulumi backend postgres:\/\/egress:\[redacted\]@127\.0\.0\.1:\d+\/postgres\?sslmode=disable cannot be reached/,
        );
        assert.ok(!(r.stdout + r.stderr).includes(pg.password), `${args[0]}: no password in the output`);
    }
});

test(
    "kill -9 of `egress up` mid-create: the next up clears its lock row and pending creates",
    { timeout: 300_000 },
    async () => {
        p.setReplicas(POOL, 0);
        assert.equal(cli(p, ["up", "--quiet"]).code, 0);
        p.setReplicas(POOL, 8);
        const up = spawnCli(p, ["up", "--quiet"]);
        await waitFor("3 proxies to run", () => proxyProcesses(p).size >= 3, 120_000, 5);
        up.kill("SIGKILL");
        await new Promise((r) => up.once("exit", r));
        await waitFor("the dead run's engine to end", () => engineProcessesOf(up.pid!).length === 0, 10_000, 25);
        assert.equal(keys("locks").length, 1, "the killed up left its lock row");
        const left = proxyProcesses(p);
        // The same row naming a live holder (this test runner: as another replica's running `up` would
        // look): recovery must undo nothing, since that holder is making these creates right now. The row
        // is Pulumi's: `{"data": <the lock JSON, base64>}`.
        const [lock] = keys("locks");
        const original = pg.sql(`SELECT data::text FROM pulumi_state WHERE key = '${lock}'`).trim();
        const held = JSON.parse(Buffer.from(JSON.parse(original).data, "base64").toString("utf8"));
        const live = JSON.stringify({
            data: Buffer.from(JSON.stringify({ ...held, pid: process.pid })).toString("base64"),
        });
        pg.sql(`UPDATE pulumi_state SET data = '${live}'::json WHERE key = '${lock}'`);
        const blocked = cli(p, ["up"]);
        assert.notEqual(blocked.code, 0, "an up under a live holder's lock does not go ahead");
        assert.match(blocked.stderr, /stack is locked by live pid\(s\) \d+@\S+; leaving it alone/);
        assert.doesNotMatch(blocked.stderr, /pending create of/);
        assert.deepEqual(proxyProcesses(p), left, "recovery stopped nothing under a live holder's lock");
        pg.sql(`UPDATE pulumi_state SET data = '${original}'::json WHERE key = '${lock}'`);
        const again = cli(p, ["up"]);
        assert.equal(again.code, 0, again.stderr);
        assert.match(again.stderr, /removed 1 stale lock\(s\) of the stack in the backend, left by dead pid/);
        // Each pending create's line says what was actually done: a proxy that ran unrecorded was stopped
        // (a second, silent undo once reported "nothing was started" for every one).
        const lines = [...again.stderr.matchAll(/pending create of \S+::(\S+)-process: (.*)/g)];
        assert.ok(lines.length, again.stderr);
        for (const [, id, what] of lines) {
            const pid = left.get(`${p.stack}-${id}`);
            if (what.startsWith("created and recorded")) continue;
            if (pid === undefined) assert.equal(what, "nothing was started", `${id} was not running`);
            else assert.equal(what, `stopped local proxy ${p.stack}-${id} (pid ${pid})`, `${id} ran: ${what}`);
        }
        assertConsistent(8, "after kill -9");
    },
);

test(
    "`egress serve` follows an outside up through the polled checkpoint; the password reaches only the engine",
    { timeout: 300_000 },
    async () => {
        p.setReplicas(POOL, 2);
        const svc = await serve(p);
        try {
            const members = async () => ((await svc.call("GET", "/v1/proxies")).body.proxies as unknown[]).length;
            await waitFor("the start-up convergence to 2", async () => (await members()) === 2, 120_000, 25);
            p.setReplicas(POOL, 4);
            const seen = new Map<number, string>();
            const outside = spawnCli(p, ["up", "--quiet"]);
            await waitFor(
                "the outside up to finish",
                () => {
                    for (const e of engineProcessesOf(outside.pid!)) seen.set(e.pid, environOf(e.pid));
                    return outside.exitCode !== null;
                },
                120_000,
                20,
            );
            assert.equal(outside.exitCode, 0);
            const t0 = Date.now();
            await waitFor("the service to list 4 members", async () => (await members()) === 4, 15_000, 25);
            console.log(`service saw the outside up ${Date.now() - t0} ms after it exited`);
            for (const [pid, env] of seen) {
                const holders = env.split("\0").filter((kv) => kv.includes(pg.password));
                assert.ok(
                    holders.every((kv) => kv.startsWith("PULUMI_BACKEND_URL=")),
                    `engine process ${pid} holds the password in its backend variable only`,
                );
            }
            for (const pid of proxyProcesses(p).values())
                assert.ok(!environOf(pid).includes(pg.password), `proxy ${pid} does not carry the password`);
            assert.ok(!svc.logs.join("\n").includes(pg.password), "no log line holds the password");
            const op = (await svc.call("PUT", `/v1/pools/${POOL}/replicas`, { body: { replicas: 1 } })).body.operation;
            assert.equal((await settled(svc, op.id)).status, "succeeded");
        } finally {
            svc.child.kill("SIGTERM");
            await svc.exited;
        }
    },
);
