/**
 * `egress doctor` on the parts a fleet shares (issue 19): which Pulumi backend (its URL with the password
 * masked) and whether it answers, stale Pulumi locks in a PostgreSQL backend's rows, and, with `--store` or
 * EGRESS_STORE, whether the Redis lease store answers. Against a real PostgreSQL 15 and a real redis-server
 * on loopback (test/helpers/postgres.ts, redis.ts); `--json` and the table alike.
 */
import { after, before, test } from "node:test";
import Redis from "ioredis";
import { CLUSTER_KEYS, stackPrefix } from "../../src/state/cluster/records";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as os from "node:os";
import { startPostgres, TestPostgres } from "../helpers/postgres";
import { startRedis, TestRedis } from "../helpers/redis";
import { freeLoopbackPort } from "../helpers/net";
import { cli, procProject, ProcProject } from "../helpers/processes";

const STACK = "doc";
let pg: TestPostgres;
let redis: TestRedis;
let p: ProcProject;

before(async () => {
    pg = await startPostgres();
    redis = await startRedis();
    p = procProject(
        STACK,
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "d", provider: "local", replicas: 0, maxReplicas: 2 }],
        },
        { PULUMI_BACKEND_URL: pg.url },
    );
    // The backend's table and the stack's rows exist once a first `up` ran.
    const up = cli(p, ["up", "--quiet"]);
    assert.equal(up.code, 0, up.stderr);
});
after(async () => {
    cli(p, ["destroy", "--yes", "--quiet"]);
    p?.cleanup();
    await redis?.cleanup();
    await pg?.cleanup();
});

type Finding = { check: string; ok: boolean; detail: string; fix?: string };

/** `egress doctor --json <args>` with extra env: its findings, exit code and all it printed. */
function doctor(args: string[] = [], env: Record<string, string> = {}) {
    const r = cli({ ...p, env: { ...p.env, ...env } }, ["doctor", "--json", ...args]);
    const body = JSON.parse(r.stdout) as { ok: boolean; findings: Finding[] };
    const all = r.stdout + r.stderr;
    for (const secret of [pg.password, redis.password])
        assert.ok(!all.includes(secret), `doctor prints no password: ${all}`);
    const one = (check: string) => body.findings.filter((f) => f.check === check);
    return { code: r.code, body, one };
}

/**
 * A Pulumi lock row for the stack, as a holder `{pid, hostname}` would leave it: where the DIY backend puts
 * it (the stack's fully qualified name) and how (`{"data": <the lock JSON, base64>}`), as a killed `up`'s is.
 */
function lockRow(name: string, pid: number): string {
    const key = `postgres/.pulumi/locks/organization/egress/${STACK}/${name}.json`;
    const lock = JSON.stringify({
        pid,
        username: "root",
        hostname: os.hostname(),
        timestamp: new Date().toISOString(),
    });
    const data = JSON.stringify({ data: Buffer.from(lock).toString("base64") });
    pg.sql(`INSERT INTO pulumi_state (key, data) VALUES ('${key}', '${data}'::json)`);
    return key;
}

test("a reachable PostgreSQL backend: named with its password masked, reachable, no lock", () => {
    const d = doctor();
    const [b] = d.one("backend");
    assert.equal(b.ok, true, JSON.stringify(b));
    assert.match(
        b.detail,
        /^PostgreSQL postgres:\/\/egress:\[redacted\]@127\.0\.0\.1:\d+\/postgres\?sslmode=disable: answers/,
    );
    assert.deepEqual(d.one("pulumi lock"), [], "no lock row, no finding");
    assert.deepEqual(d.one("store"), [], "no store asked for, none checked");
    assert.equal(d.code, 0, JSON.stringify(d.body));
    // The table, too, masks it.
    const table = cli(p, ["doctor"]);
    assert.match(table.stdout, /ok {4}backend: PostgreSQL postgres:\/\/egress:\[redacted\]@/);
    assert.ok(!table.stdout.includes(pg.password));
});

test("lock rows: a dead holder of this host is a stale lock (exit 3); a live one is an update running", () => {
    const gone = cp.spawnSync("true").pid; // a pid of this host that ran and is gone
    const dead = lockRow("11111111-dead", gone);
    const live = lockRow("22222222-live", process.pid);
    try {
        const d = doctor();
        const locks = d.one("pulumi lock");
        assert.equal(locks.length, 2, JSON.stringify(locks));
        const stale = locks.find((l) => !l.ok)!;
        assert.match(
            stale.detail,
            new RegExp(`^stale: pid ${gone}@${os.hostname()} is gone \\(${dead} in the postgres backend\\)`),
        );
        assert.match(stale.fix!, /next `egress up`.*removes it/);
        const running = locks.find((l) => l.ok)!;
        assert.match(
            running.detail,
            new RegExp(`held by pid ${process.pid}@${os.hostname()}: an update is running \\(${live}\\)`),
        );
        assert.equal(d.code, 3, "a stale lock is a finding");
        assert.equal(d.body.ok, false);
    } finally {
        pg.sql(`DELETE FROM pulumi_state WHERE key LIKE 'postgres/.pulumi/locks/%'`);
    }
});

test("an unreachable PostgreSQL: the backend fails naming the masked URL, exit 3", async () => {
    const down = pg.url.replace(`:${pg.port}/`, `:${await freeLoopbackPort()}/`);
    const d = doctor([], { PULUMI_BACKEND_URL: down });
    const [b] = d.one("backend");
    assert.equal(b.ok, false);
    assert.match(
        b.detail,
        /^PostgreSQL postgres:\/\/egress:\[redacted\]@127\.0\.0\.1:\d+\/postgres\?sslmode=disable: cannot be reached \(.*ECONNREFUSED/,
    );
    assert.match(b.fix!, /exit 75 until it answers/);
    assert.equal(d.code, 3);
});

test("the file backend is named as one", () => {
    const d = doctor([], { PULUMI_BACKEND_URL: `file://${p.backendDir}` });
    const [b] = d.one("backend");
    assert.equal(b.ok, true);
    assert.equal(b.detail, `file file://${p.backendDir}: a writable directory`);
});

test("the Redis store, by --store and by EGRESS_STORE: answers; stopped, it fails with the URL masked (exit 3)", async () => {
    for (const [args, env] of [
        [["--store", redis.url], {}],
        [[], { EGRESS_STORE: redis.url }],
    ] as [string[], Record<string, string>][]) {
        const d = doctor(args, env);
        const [s] = d.one("store");
        assert.equal(s.ok, true, JSON.stringify(s));
        assert.match(
            s.detail,
            new RegExp(
                `^redis redis://:\\*\\*\\*@127\\.0\\.0\\.1:${redis.port}/? answers \\((--store|EGRESS_STORE)\\)`,
            ),
        );
        assert.equal(d.code, 0, JSON.stringify(d.body));
        const [l] = d.one("leader");
        assert.match(l.detail, /^no egress serve of stack \S+ runs on this store$/, "no replica, no leader");
    }
    // A leader lock and a heartbeat as a replica writes them (src/service/cluster): doctor names it.
    const client = new Redis(redis.url);
    try {
        const prefix = stackPrefix(STACK);
        const since = new Date().toISOString();
        await client.set(prefix + CLUSTER_KEYS.leader, JSON.stringify({ id: "r-1", token: 7, since }), "PX", 60_000);
        await client.hset(
            prefix + CLUSTER_KEYS.replicas,
            "r-1",
            JSON.stringify({ id: "r-1", url: "http://127.0.0.1:8081", lastHeartbeat: since }),
        );
        const [l] = doctor(["--store", redis.url]).one("leader");
        assert.equal(
            l.detail,
            `r-1 (http://127.0.0.1:8081) leads stack ${STACK} since ${since}, fencing token 7; 1 replica(s) alive`,
        );
        await client.del(prefix + CLUSTER_KEYS.leader, prefix + CLUSTER_KEYS.replicas);
    } finally {
        client.disconnect();
    }
    assert.equal(doctor(["--store", "memory"]).one("store")[0].ok, true);
    const bad = doctor(["--store", "redis://127.0.0.1"]).one("store")[0];
    assert.equal(bad.ok, false);
    assert.match(bad.detail, /--store .* has no port/);

    await redis.kill();
    try {
        const t0 = Date.now();
        const d = doctor(["--store", redis.url]);
        const [s] = d.one("store");
        assert.equal(s.ok, false);
        assert.match(
            s.detail,
            /^redis redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/? does not answer \(--store\): .*ECONNREFUSED/,
        );
        assert.ok(Date.now() - t0 < 30_000, "doctor does not hang on a dead store");
        assert.equal(d.code, 3);
    } finally {
        await redis.start();
    }
});
