/**
 * Replicas started together: the first deploy of a Deployment with several replicas, or of systemd
 * template units started at once. Each round is a stack in a database no process has opened yet, on a
 * real PostgreSQL 15, and a real redis-server. Two races meet there: every replica creates the backend's
 * table (PostgreSQL's `CREATE TABLE IF NOT EXISTS` fails the losers with a unique violation), then the
 * stack (the losers fail `stack init` with "already exists"):
 * - 3, then 5 replicas started at the same moment, 5 rounds each: every one gets ready, one leads, all
 *   list the same one member, and exactly one proxy process runs for it;
 * - a replica whose start fails after it joined the store (the state backend refuses connections) exits
 *   non-zero within seconds with the reason in a fatal JSON line, instead of living on without its port
 *   (its store connections kept it alive before); so does one whose gateway port is taken.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import { startPostgres, type TestPostgres } from "../helpers/postgres";
import { killServices, procProject, type ProcProject, proxyProcesses, serve } from "../helpers/processes";
import { startRedis, type TestRedis } from "../helpers/redis";
import { leaderOf } from "../helpers/replicas";
import { freeLoopbackPort } from "../helpers/net";
import { waitFor } from "../helpers/harness";

const ROUNDS = 5;
const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 2 }],
};

let redis: TestRedis;
let pg: TestPostgres;
let backendEnv: Record<string, string>;
const projects: ProcProject[] = [];

before(async () => {
    redis = await startRedis();
    pg = await startPostgres();
    backendEnv = { PULUMI_BACKEND_URL: pg.url };
});
after(async () => {
    killServices();
    for (const p of projects) p.cleanup();
    await redis?.cleanup();
    await pg?.cleanup();
});

/** The backend in a new database of the test's PostgreSQL: no process has created its state table yet. */
function freshDatabase(name: string): Record<string, string> {
    pg.sql(`CREATE DATABASE ${name}`);
    return { PULUMI_BACKEND_URL: pg.url.replace("/postgres?", `/${name}?`) };
}

const memberIds = async (svc: Awaited<ReturnType<typeof serve>>) =>
    ((await svc.call("GET", "/v1/proxies")).body.proxies as { id: string }[]).map((x) => x.id).sort();

for (const n of [3, 5]) {
    test(`${n} replicas started at once on a fresh stack, ${ROUNDS} rounds: all ready, one leader, one member`, async () => {
        for (let round = 1; round <= ROUNDS; round++) {
            const p = procProject(`start${n}r${round}`, config, freshDatabase(`start${n}r${round}`));
            projects.push(p);
            const started = Date.now();
            const replicas = await Promise.all(Array.from({ length: n }, () => serve(p, ["--store", redis.url])));
            const leader = await leaderOf(replicas, 30_000);
            assert.ok(leader, `round ${round}: one leader`);
            await waitFor(
                `round ${round}: every replica lists the one member`,
                async () => (await Promise.all(replicas.map(memberIds))).every((ids) => ids.join() === "web-0"),
                120_000,
                25,
            );
            assert.equal(proxyProcesses(p).size, 1, `round ${round}: one proxy process, not one per replica`);
            // Whether this round met the table race (the replicas' notice); it need not every time.
            const raced = replicas.filter((r) => r.logs.some((l) => l.includes("creating the backend's state table")));
            process.stdout.write(
                `# ${n} replicas, round ${round}: all ready in ${Date.now() - started} ms; ${raced.length} met the table race\n`,
            );
            killServices();
            await Promise.all(replicas.map((r) => r.exited));
            for (const pid of proxyProcesses(p).values()) process.kill(pid, "SIGKILL");
        }
    });
}

/** Starts a replica that must fail; returns the error `serve` rejected with and how long it took. */
async function failedStart(p: ProcProject, args: string[]): Promise<{ error: Error; ms: number }> {
    const at = Date.now();
    const error = await serve(p, ["--store", redis.url, ...args]).then(
        () => assert.fail("the start must fail"),
        (e: Error) => e,
    );
    assert.match(error.message, /exited with [1-9]\d* before it was ready/, error.message);
    return { error, ms: Date.now() - at };
}

test(
    "a replica whose start fails after it joined the store exits non-zero within seconds, saying why in JSON",
    { timeout: 60_000 },
    async () => {
        // The state backend refuses connections: reading the stack fails after the store's connections are open.
        const port = await freeLoopbackPort();
        const p = procProject("startfail", config, {
            PULUMI_BACKEND_URL: `postgres://egress@127.0.0.1:${port}/egress`,
        });
        projects.push(p);
        const { error, ms } = await failedStart(p, []);
        assert.match(error.message, /"level":60/, error.message);
        assert.ok(ms < 30_000, `exited ${ms} ms after it started`);
    },
);

test(
    "a replica whose gateway port is taken exits non-zero at once, saying why in JSON",
    { timeout: 60_000 },
    async () => {
        const taken = net.createServer();
        await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
        const port = (taken.address() as net.AddressInfo).port;
        const p = procProject("startport", config, backendEnv);
        projects.push(p);
        try {
            const { error, ms } = await failedStart(p, ["--gateway-port", String(port)]);
            assert.match(error.message, new RegExp(`"level":60.*the gateway's port 127\\.0\\.0\\.1:${port} is in use`));
            assert.ok(ms < 20_000, `exited ${ms} ms after it started`);
        } finally {
            await new Promise<void>((r) => taken.close(() => r()));
        }
    },
);
