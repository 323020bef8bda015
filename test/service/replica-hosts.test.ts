/**
 * Replicas of one stack on two hosts (docs/operations.md, "Running replicas"): each "host" is its own
 * project directory and EGRESS_HOME, its egress processes in a UTS namespace of their own with its name
 * (processes.ts), so the engine's Pulumi locks name that host, as on another machine. The stack is on a
 * real PostgreSQL backend with a real redis-server as the store; its pool is `static` (three proxies on
 * loopback), members that are no host's processes.
 * - host-a's first replica is killed with SIGKILL while its engine holds the stack's lock row: a process
 *   of another host, which host-b cannot check. host-b's replica leads, waits out the kill grace, counts
 *   the holder gone, clears its lock and converges: the members turn healthy, no lock row is left.
 *   Its gateway refuses the PostgreSQL backend as a target (403 forbidden_target).
 * - A home whose stack file differs (here: no encryption salt yet) is refused, naming the rule; once it
 *   has the same stack file it joins. A replica of host-a joins host-b's, both with the same `config:`
 *   scope; when host-b's leader is killed, host-a's leads within 10 s and both lists agree.
 * - With no replica running, an `egress up --store` of host-a killed inside its update leaves its lock
 *   row; host-b's `egress up --store` counts it gone after the grace, clears it and succeeds.
 * - Two replicas of one home follow an edit of their stack file to the new scope without drifting.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { Server } from "proxy-chain";
import {
    ADMIN_TOKEN,
    cliAsync,
    killServices,
    procProject,
    ProcProject,
    serve,
    ServeProcess,
    spawnCli,
    withServiceLogs,
} from "../helpers/processes";
import { startRedis, TestRedis } from "../helpers/redis";
import { startPostgres, TestPostgres } from "../helpers/postgres";
import { clusterOf, leaderOf } from "../helpers/replicas";
import { pidsMentioning } from "../helpers/project";
import { freeLoopbackPort, proxyBasicAuth, rawHttp } from "../helpers/net";
import { waitFor } from "../helpers/harness";

let redis: TestRedis;
let pg: TestPostgres;
const proxies: Server[] = [];
let hostA: ProcProject;
let hostB: ProcProject;
let other: ProcProject;
/** The stack's config as the test starts it. */
let config: Record<string, any>;
/** The stack's config with the first proxy in a zone: `other`'s from the start, every home's later. */
let zonedConfig: object;

/** The stack's lock rows (none before the backend's table exists, at its first use). */
const lockRows = () => {
    try {
        return pg.keys("locks");
    } catch (e) {
        if (/relation "pulumi_state" does not exist/.test((e as Error).message)) return [];
        throw e;
    }
};
/** Waits until `svc` lists 3 healthy members and no lock row is left (its log on failure). */
const converged = (svc: ServeProcess, who: string) =>
    withServiceLogs(
        svc,
        waitFor(
            `${who}: 3 healthy members, no lock row`,
            async () => {
                const m = await members(svc);
                return m.length === 3 && m.every((x) => x.endsWith(":up")) && lockRows().length === 0;
            },
            120_000,
            250,
        ),
    );
const stackFileOf = (p: ProcProject) => path.join(p.dir, "stacks", `Pulumi.${p.stack}.yaml`);

before(async () => {
    [redis, pg] = await Promise.all([startRedis(), startPostgres()]);
    for (let i = 0; i < 3; i++) {
        const s = new Server({ host: "127.0.0.1", port: 0, verbose: false });
        await s.listen();
        proxies.push(s);
    }
    config = {
        "egress:providers": { byo: { type: "static", proxies: proxies.map((s) => `http://127.0.0.1:${s.port}`) } },
        "egress:pools": [{ name: "byo", provider: "byo", replicas: 3 }],
    };
    const env = { PULUMI_BACKEND_URL: pg.url };
    hostA = procProject("hosts", config, env, { host: "egress-host-a" });
    hostB = procProject("hosts", config, env, { host: "egress-host-b" });
    // A third home whose stack file puts the first proxy in a zone: another stack config.
    const [first, ...rest] = config["egress:providers"].byo.proxies;
    zonedConfig = {
        ...config,
        "egress:providers": { byo: { type: "static", proxies: [{ url: first, zone: "rack-9" }, ...rest] } },
    };
    other = procProject("hosts", zonedConfig, env, { host: "egress-host-c" });
});
after(async () => {
    killServices();
    for (const p of [hostA, hostB, other]) p?.cleanup();
    for (const s of proxies) await s.close(true).catch(() => undefined);
    await Promise.all([redis?.cleanup(), pg?.cleanup()]);
});

/** The members a replica lists, healthy ones marked. */
const members = async (svc: ServeProcess) =>
    ((await svc.call("GET", "/v1/proxies")).body.proxies as { id: string; health: string }[])
        .map((x) => `${x.id}:${x.health === "healthy" ? "up" : x.health}`)
        .sort();

test(
    "replicas on two hosts: a dead holder's lock on another host is cleared; configs must match",
    { timeout: 300_000 },
    async () => {
        // A short grace: the take-over below waits the lock's TTL (5 s), then the grace and 2 s.
        const args = ["--store", redis.url, "--engine-kill-grace", "2"];

        // host-a's replica alone leads and converges: SIGKILL while its engine holds the lock row.
        // (Ready comes before leading: the start-up `up` is logged once the replica took the lock.) An update
        // that ends between the row's sighting and the kill leaves none: then once more, on the made stack.
        let row: string | undefined;
        for (let attempt = 1; !row || lockRows().length === 0; attempt++) {
            assert.ok(attempt <= 3, "killed host-a's replica inside its update within 3 tries");
            const a1 = await serve(hostA, args);
            await waitFor(
                "host-a's start-up `up`",
                () => a1.entries.some((e) => e.msg === "operation started" && e.kind === "up"),
                60_000,
                25,
            );
            row = await waitFor("host-a's engine holding the stack's lock row", async () => lockRows()[0], 120_000, 20);
            a1.child.kill("SIGKILL");
            await a1.exited;
        }
        assert.deepEqual(lockRows(), [row], "the killed engine's lock row is left behind");

        // host-b runs the same stack file (copied, its encryption salt too): it leads, and clears the lock.
        fs.copyFileSync(stackFileOf(hostA), stackFileOf(hostB));
        assert.match(fs.readFileSync(stackFileOf(hostB), "utf8"), /encryptionsalt/);
        const gatewayPort = await freeLoopbackPort();
        const b1 = await serve(hostB, [...args, "--gateway-port", String(gatewayPort)]);
        await converged(b1, "host-b's replica converged");
        // The gateway never relays to the state backend, which listens on this machine's loopback here.
        const auth = proxyBasicAuth("byo", ADMIN_TOKEN)["proxy-authorization"];
        const target = `127.0.0.1:${pg.port}`;
        const refused = await rawHttp(
            gatewayPort,
            `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth}\r\n\r\n`,
            1500,
        );
        assert.equal(refused.status, 403, refused.body);
        assert.equal(refused.headers["x-egress-error"], "forbidden_target");
        assert.match(
            JSON.parse(refused.body).error.message,
            /is the state backend .*: the gateway does not relay there/,
        );
        assert.ok(!refused.body.includes(pg.password), "the refusal does not show the backend's password");

        const gone = b1.entries.find((e) => /^counting pid \d+ on egress-host-a as gone/.test(e.msg ?? ""));
        assert.ok(gone, `host-b counted host-a's engine gone:\n${b1.logs.slice(-30).join("\n")}`);
        const waited = b1.entries.find((e) => /waiting \d+ s \(--engine-kill-grace\)/.test(e.msg ?? ""));
        assert.ok(waited && waited.waitMs >= 2_000, "after waiting out the kill grace");

        // A home with another stack config (a zone more) is refused, naming the rule and the replica.
        const view = await clusterOf(b1);
        assert.match(view.replicas[0].scope, /^config:[0-9a-f]{16}$/);
        await assert.rejects(serve(other, args), (e: Error) => {
            assert.match(e.message, /exited with 1 before it was ready/);
            assert.match(e.message, /already run with another stack config/);
            assert.ok(e.message.includes(view.replicas[0].id), "names the running replica");
            assert.ok(!e.message.includes(pg.password) && !e.message.includes(redis.password), "no password printed");
            return true;
        });

        // `egress doctor` says it beforehand: host-b's home agrees with the running replicas, `other`'s not.
        const [okDoc, badDoc] = await Promise.all([
            cliAsync(hostB, ["doctor", "--store", redis.url]),
            cliAsync(other, ["doctor", "--store", redis.url]),
        ]);
        assert.match(
            okDoc.stdout,
            /replicas on several hosts may join with the same stack file \(config:[0-9a-f]{16}\); the running replicas agree/,
        );
        assert.match(
            badDoc.stdout + badDoc.stderr,
            /but the stack's replicas run as config:[0-9a-f]{16}: a replica started here is refused/,
        );
        assert.notEqual(badDoc.code, 0, "a failed check fails the doctor");

        // host-a again: it joins host-b's replica; killing host-b's leader hands the stack to host-a.
        const a2 = await serve(hostA, args);
        const leader = await leaderOf([b1, a2]);
        assert.equal(leader, b1, "the replica that led keeps leading");
        const both = await clusterOf(a2);
        assert.deepEqual(
            both.replicas.map((r: { host: string }) => r.host).sort(),
            ["egress-host-a", "egress-host-b"],
            "one replica per host",
        );
        assert.equal(new Set(both.replicas.map((r: { scope: string }) => r.scope)).size, 1, "one scope");
        assert.deepEqual(await members(a2), await members(b1), "both list the same members and health");

        // A stack file edit on one home only: that replica drifts (it would apply nothing), and the stack
        // moves to the new config once every home has the edit, with no step-down on the way.
        const scopes = async () => (await clusterOf(b1)).replicas.map((r: { scope: string }) => r.scope);
        const oldScope = (await scopes())[0];
        hostA.writeConfig(zonedConfig);
        await withServiceLogs(
            a2,
            waitFor(
                "host-a's replica to report its drift",
                () =>
                    a2.entries.some((e) => /^this home's stack file changed while replicas of other homes/.test(e.msg)),
                60_000,
                25,
            ),
        );
        assert.equal(new Set(await scopes()).size, 2, "two scopes while one home has the edit");
        hostB.writeConfig(zonedConfig);
        await withServiceLogs(
            a2,
            waitFor(
                "one new scope for both",
                async () => {
                    const now = await scopes();
                    return now.length === 2 && new Set(now).size === 1 && now[0] !== oldScope;
                },
                60_000,
                25,
            ),
        );
        await waitFor(
            "host-a's replica to agree again",
            () => a2.entries.some((e) => e.msg === "this home's stack file and the stack's replicas agree again"),
            60_000,
            25,
        );
        assert.equal((await clusterOf(a2)).leader.id, (await clusterOf(b1)).self, "host-b's replica still leads");
        const killedAt = Date.now();
        b1.child.kill("SIGKILL");
        await b1.exited;
        await waitFor(
            "host-a's replica leading",
            async () => (await clusterOf(a2)).leader?.id === (await clusterOf(a2)).self,
            10_000,
            100,
        );
        const failover = Date.now() - killedAt;
        await converged(a2, "host-a's replica converged");
        process.stdout.write(`# failover across hosts: new leader ${failover} ms after SIGKILL\n`);
        a2.child.kill("SIGTERM");
        assert.equal(await a2.exited, 0);
        // An engine command a replica ran at its exit (the stack watch's export) ends with it: nothing stays.
        for (const p of [hostA, hostB])
            await waitFor(`no process of ${p.host} left`, () => pidsMentioning(p.dir).length === 0, 10_000, 100);

        // No replica runs. host-a's `egress up --store` dies (SIGKILL) while its engine holds the lock row;
        // host-b's then holds the store's lock, counts host-a's engine gone after the grace, and converges.
        // An update that ends between the row's sighting and the kill leaves none (a no-op up is short):
        // then once more, as for the replica above.
        for (let attempt = 1; lockRows().length === 0; attempt++) {
            assert.ok(attempt <= 3, "killed host-a's `egress up` inside its update within 3 tries");
            const cut = spawnCli(hostA, ["up", "--quiet", "--store", redis.url]);
            let ended = false;
            const exited = new Promise((r) => cut.once("exit", r)).then(() => (ended = true));
            // A short no-op update may hold the row between two reads (each a psql run): then it ends
            // unseen, and the next attempt tries again.
            await waitFor(
                "host-a's `egress up` holding the lock row, or ending",
                () => ended || lockRows().length > 0,
                60_000,
                20,
            );
            cut.kill("SIGKILL");
            await exited;
            await waitFor(
                `no process of ${hostA.host} left`,
                () => pidsMentioning(hostA.dir).length === 0,
                10_000,
                100,
            );
        }
        assert.equal(lockRows().length, 1, "the killed command's lock row is left behind");
        const next = await cliAsync(hostB, ["up", "--quiet", "--store", redis.url, "--engine-kill-grace", "2"]);
        assert.equal(next.code, 0, next.stderr);
        assert.match(next.stderr, /held by pid \d+ on egress-host-a, a previous holder of the store's lock: waiting/);
        assert.match(next.stderr, /counting pid \d+ on egress-host-a as gone/);
        assert.deepEqual(lockRows(), [], "no lock row is left");

        // Two replicas of one home read one stack file: an edit moves them to the new scope with no drift.
        const same = [await serve(hostA, args), await serve(hostA, args)];
        const before = (await clusterOf(same[0])).replicas[0].scope;
        hostA.writeConfig(config);
        await waitFor(
            "both replicas of host-a on one new scope",
            async () => {
                const now = (await clusterOf(same[0])).replicas.map((r: { scope: string }) => r.scope);
                return now.length === 2 && new Set(now).size === 1 && now[0] !== before;
            },
            60_000,
            25,
        );
        for (const r of same) {
            assert.ok(!r.entries.some((e) => /stack file changed/.test(e.msg ?? "")), "no drift within one home");
            r.child.kill("SIGTERM");
            assert.equal(await r.exited, 0);
        }
        for (const p of [hostA, hostB])
            await waitFor(`no process of ${p.host} left`, () => pidsMentioning(p.dir).length === 0, 10_000, 100);
    },
);
