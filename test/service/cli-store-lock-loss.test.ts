/**
 * A CLI writer that loses the stack's lock in the store mid-run (src/cli/lock-loss.ts): `egress up
 * --store` of a local stack on a real redis-server, its every connection to Redis through a loopback
 * relay the test cuts, the real engine. The engine is made to hang (the CLI and its plugins stopped with
 * SIGSTOP, as test/service/leader-lock-loss.test.ts does to a leader), so only an end after the grace
 * stops it. While cut, the command only warns (the lock is not known to be another's); once another
 * holder took the lock and the command hears of it, it says so at once, cancels its engine run, ends it
 * after `--engine-kill-grace`, and exits 4. A later `up` converges and nothing is leaked.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import Redis from "ioredis";
import {
    backendLockFiles,
    cli,
    cliAsync,
    engineProcessesOf,
    engineUpdating,
    ProcProject,
    proxyProcesses,
    spawnCli,
    wedgeEngine,
} from "../helpers/processes";
import type { TestRedis } from "../helpers/redis";
import { RedisRelay } from "../helpers/redis-relay";
import { withRedisProject } from "../helpers/redis-project";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 4, maxReplicas: 8, cooldownSeconds: 0 }],
};
let p: ProcProject;
let redis: TestRedis;
withRedisProject("cliloss", config, (made) => ({ p, redis } = made));

const GRACE_S = 3;

test("`egress up --store` whose lock another takes mid-update stops its engine run and exits 4; the next up converges", async () => {
    const relay = new RedisRelay(redis.port);
    after(() => relay.close());
    const relayPort = await relay.listen();
    const direct = new Redis(redis.url);
    after(() => direct.disconnect());
    const key = `egress:${p.stack}:leader`;

    const up = spawnCli(p, ["up", "--quiet", "--store", relay.via(redis.url), "--engine-kill-grace", String(GRACE_S)]);
    let err = "";
    up.stderr.on("data", (d) => (err += d));
    const exited = new Promise<number | null>((r) => up.once("exit", r));
    const pid = up.pid!;
    await waitFor("the command's engine inside the update", () => engineUpdating(pid), 120_000, 5);
    // A step stuck in a provider, a wedged CLI: the update cannot finish, and a cancel cannot end it.
    const stuck = wedgeEngine(pid);
    assert.ok(stuck.length >= 2, JSON.stringify(engineProcessesOf(pid)));

    const cut = Date.now();
    relay.close();
    // Past the TTL (5 s) it cannot renew: the lock may have run out, but it is not known to be another's.
    await waitFor("the command to warn it cannot renew", () => err.includes("WARNING: cannot renew"), 15_000, 50);
    assert.ok(!err.includes("LOST"), err);
    assert.ok(engineProcessesOf(pid).length >= stuck.length, "a warning only: the engine run goes on");
    await waitFor("the lock to run out", async () => (await direct.get(key)) === null, 10_000, 50);
    // Another holder takes it, as a replica that leads once the TTL ran out; then the command reaches Redis again.
    const intruder = { id: "vm-1-intruder", token: 999, since: new Date().toISOString() };
    await direct.set(key, JSON.stringify(intruder), "PX", 120_000);
    const back = new RedisRelay(redis.port);
    after(() => back.close());
    await back.listen(relayPort);

    await waitFor("the command to say it lost the lock", () => err.includes("LOST stack"), 15_000, 20);
    const lostAt = Date.now();
    const line = err.split("\n").find((l) => l.startsWith("LOST stack"))!;
    assert.match(line, /replica vm-1-intruder holds it now/, line);
    assert.match(line, /cancelling this command's engine run/, line);
    await waitFor("the command's engine gone", () => engineProcessesOf(pid).length === 0, 30_000, 50);
    const gone = Date.now();
    const code = await exited;
    console.log(
        `cut at 0: lock lost (heard) at ${lostAt - cut} ms; engine gone at ${gone - cut} ms, ` +
            `${gone - lostAt} ms after the loss (grace ${GRACE_S} s); exit ${code}`,
    );
    assert.equal(code, 4, err);
    assert.ok(gone - lostAt < GRACE_S * 1000 + 5_000, `engine gone ${gone - lostAt} ms after the loss`);
    assert.match(err, /did not end within 3s: its processes were ended/, err);
    assert.match(err, /error: `egress up` lost stack cliloss's lock in the store to replica vm-1-intruder/, err);
    assert.equal(await direct.get(key), JSON.stringify(intruder), "another's lock is not resigned");
    assert.ok(!err.includes(redis.url), "the store's URL is never printed");

    // The other holder is gone: the next `up` through the store clears the killed run's lock and converges.
    await direct.del(key);
    const again = await cliAsync(p, ["up", "--quiet", "--store", redis.url]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(proxyProcesses(p).size, 4, again.stderr);
    const outputs = JSON.parse(cli(p, ["outputs", "--json"]).stdout).proxies as { id: string }[];
    assert.deepEqual(
        outputs.map((o) => `${p.stack}-${o.id}`).sort(),
        [...proxyProcesses(p).keys()].sort(),
        "state = processes",
    );
    assert.deepEqual(backendLockFiles(p), [], "no backend lock left");
    const gc = cli(p, ["gc", "--json"]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.deepEqual(JSON.parse(gc.stdout).orphans, [], "gc finds nothing");
});
