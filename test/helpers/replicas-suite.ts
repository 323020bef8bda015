/**
 * Three `egress serve` replicas of one stack, sharing EGRESS_HOME as three instances of
 * deploy/egress@.service would, on a real redis-server (`--store redis://…`), one body for every Pulumi
 * backend (backends.ts): test/service/replicas.test.ts runs it on the file backend,
 * replicas-postgres.test.ts on a real PostgreSQL.
 * - one leader; GET /v1/cluster agrees on every replica; every replica lists the same members with the
 *   same health: the leader's verdicts (only the leader probes: the followers' probe counters stay at 0);
 * - a scale request through a follower is queued for the leader in the store (202, operation id) and
 *   converges; its operation is readable through any replica; one sent while no replica leads (the
 *   failover below) is accepted the same way and applied by the next leader;
 * - leases taken on one replica are released on another, and no proxy is in two live leases;
 * - `kill -9` of the leader in the middle of a scale (its engine inside the update, holding the stack's
 *   lock in the backend): another replica leads within 10 s, leases go on being granted by the survivors
 *   meanwhile, and the stack converges with processes = members = outputs, `gc` finding nothing, no lock
 *   left in the backend (the new leader's recovery removed the dead one's) and no engine process of it;
 * - and the stack's state is in the backend the test names (backends.ts `holdsState`).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { StateBackend } from "./backends";
import {
    cli,
    engineUpdating,
    endProcProject,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    ServeProcess,
} from "./processes";
import { startRedis, TestRedis } from "./redis";
import { clusterOf, leaderOf } from "./replicas";
import { assertNothingLeaked } from "./restart-checks";
import { settled, waitFor } from "./harness";

/** Registers the three tests (and their before/after) in the calling test file. */
export function replicasSuite(backend: StateBackend): void {
    const config = {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 6, cooldownSeconds: 0 }],
    };
    let p: ProcProject;
    let redis: TestRedis;
    let stopBackend: (() => Promise<void>) | undefined;
    let replicas: ServeProcess[] = [];

    before(async () => {
        redis = await startRedis();
        const started = await backend.start();
        stopBackend = started.stop;
        p = procProject("rep", config, started.env);
    });
    after(async () => {
        endProcProject(p);
        await redis?.cleanup();
        await stopBackend?.();
    });

    const cluster = clusterOf;
    const memberIds = async (svc: ServeProcess) =>
        ((await svc.call("GET", "/v1/proxies")).body.proxies as { id: string }[]).map((x) => x.id).sort();

    /** Each member's id and health as `svc` lists them, with whose verdicts they are. */
    async function healthView(svc: ServeProcess) {
        const body = (await svc.call("GET", "/v1/proxies")).body;
        const health = (body.proxies as { id: string; health: string }[])
            .map((x) => [x.id, x.health] as const)
            .sort(([a], [b]) => a.localeCompare(b));
        return { health, verdicts: body.verdicts };
    }

    /** egress_probes_total of `svc`, both results together (GET /metrics). */
    async function probesOf(svc: ServeProcess): Promise<number> {
        const text = await (await fetch(`${svc.url}/metrics`)).text();
        return [...text.matchAll(/^egress_probes_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    }

    test(`${backend.name} backend: three replicas: one leader, the same view everywhere, a scale through a follower converges`, async () => {
        const args = ["--store", redis.url, "--probe-interval", "0.5"];
        replicas = [await serve(p, args), await serve(p, args), await serve(p, args)];
        const leader = await leaderOf(replicas);
        const views = await Promise.all(replicas.map(cluster));
        assert.ok(
            views.every((v) => v.store === "redis" && v.replicas.filter((r: any) => r.leader).length === 1),
            JSON.stringify(views[0]),
        );
        assert.deepEqual(new Set(views.map((v) => v.self)).size, 3, "three distinct replica ids");

        // The leader converged the stack (2 members); every replica lists the same members.
        await waitFor(
            "2 members on every replica",
            async () => (await Promise.all(replicas.map(memberIds))).every((ids) => ids.length === 2),
            120_000,
            25,
        );
        assert.ok(backend.holdsState(p), `the stack's state is in the ${backend.name} backend, and only there`);
        const lists = await Promise.all(replicas.map(memberIds));
        assert.deepEqual(lists[1], lists[0]);
        assert.deepEqual(lists[2], lists[0]);

        const follower = replicas.find((r) => r !== leader)!;
        const r = await follower.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 3 } });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        assert.equal(r.body.operation.status, "queued", JSON.stringify(r.body));
        assert.equal(r.headers.get("x-egress-leader"), null, "answered by the follower itself, which queued it");
        const id = r.body.operation.id;
        const op = await waitFor(
            "the scale to settle, read through another follower",
            async () => {
                const other = replicas.find((x) => x !== leader && x !== follower)!;
                const o = (await other.call("GET", `/v1/operations/${id}`)).body.operation;
                return o && o.status !== "queued" && o.status !== "running" ? o : undefined;
            },
            120_000,
            200,
        );
        assert.equal(op.status, "succeeded", JSON.stringify(op));
        await waitFor(
            "3 members on every replica",
            async () => (await Promise.all(replicas.map(memberIds))).every((ids) => ids.length === 3),
            60_000,
            25,
        );
        assert.equal(proxyProcesses(p).size, 3);

        // The same health everywhere, and it is the leader's: wait for the three to agree on 3 healthy members.
        const seen = await waitFor(
            "the three replicas to list the same 3 healthy members",
            async () => {
                const v = await Promise.all(replicas.map(healthView));
                const same = v.every((x) => JSON.stringify(x.health) === JSON.stringify(v[0].health));
                return same && v[0].health.length === 3 && v[0].health.every(([, h]) => h === "healthy")
                    ? v
                    : undefined;
            },
            60_000,
            100,
        );
        assert.deepEqual(seen[1].health, seen[0].health);
        assert.deepEqual(seen[2].health, seen[0].health);
        const leaderId = (await cluster(leader)).self;
        for (const [i, v] of seen.entries()) {
            const leads = replicas[i] === leader;
            assert.equal(v.verdicts.decidedBy, leaderId, `replica ${i} shows the leader's verdicts`);
            assert.equal(v.verdicts.self, leads);
            assert.equal(v.verdicts.stale, undefined, JSON.stringify(v.verdicts));
            if (!leads) assert.ok(v.verdicts.publishedAt, "a follower says when the leader published");
        }
        // Only the leader probes (--probe-interval 0.5 s: it has probed many times by now).
        const probes = await Promise.all(replicas.map(probesOf));
        for (const [i, n] of probes.entries())
            if (replicas[i] === leader) assert.ok(n > 0, `the leader probes (${n})`);
            else assert.equal(n, 0, `follower ${i} probed ${n} times: only the leader may`);
    });

    test(`${backend.name} backend: leases across replicas: taken on one, released on another, never one proxy in two live leases`, async () => {
        await waitFor(
            "3 healthy members on every replica",
            async () =>
                (await Promise.all(replicas.map(async (s) => (await s.call("GET", "/v1/proxies")).body.proxies))).every(
                    (px: { health: string }[]) => px.length === 3 && px.every((x) => x.health === "healthy"),
                ),
            60_000,
            25,
        );
        // 1,000 at once, spread over the three: exactly the 3 members are leased, each once.
        const got = await Promise.all(
            Array.from({ length: 1000 }, (_, i) =>
                replicas[i % 3].call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 60 } }),
            ),
        );
        const granted = got.filter((g) => g.status === 201).map((g) => g.body.lease);
        // Released (each on another replica) before anything is asserted: a failed assertion here must not
        // leave members leased for the 60 s TTL, failing the tests after this one for the wrong reason.
        const released = await Promise.all(
            granted.map((l, i) =>
                replicas[(i + 1) % 3].call("POST", `/v1/leases/${l.id}/release`, { body: { outcome: "ok" } }),
            ),
        );
        assert.equal(granted.length, 3, `3 members, 3 leases: ${[...new Set(got.map((g) => g.status))]}`);
        assert.equal(new Set(granted.map((l) => l.proxy.id)).size, 3, "no proxy in two live leases");
        // Anything else fails with what it said (status and body), so a rare answer is named, not guessed.
        const other = got.filter(
            (g) => g.status !== 201 && !(g.status === 503 && g.body.error?.code === "none_available"),
        );
        assert.equal(
            other.length,
            0,
            `answers other than 201 and 503 none_available: ${JSON.stringify(other.slice(0, 3))}`,
        );
        for (const rel of released) assert.equal(rel.status, 200, JSON.stringify(rel.body));
        // Churn against a model: 24 workers lease on one replica and release on the next, 600 leases in all.
        // A proxy leaves the model before its release is sent, so a grant of a proxy still in the model
        // means it was in two live leases at once.
        const live = new Set<string>();
        let leased = 0;
        let worker = 0;
        await Promise.all(
            Array.from({ length: 24 }, async () => {
                const me = worker++;
                for (let i = 0; leased < 600; i++) {
                    const at = replicas[(me + i) % 3];
                    const g = await at.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 60 } });
                    if (g.status !== 201) {
                        assert.equal(g.body.error.code, "none_available");
                        continue;
                    }
                    leased++;
                    const proxy = g.body.lease.proxy.id;
                    assert.ok(!live.has(proxy), `${proxy} granted while another lease on it was live`);
                    live.add(proxy);
                    await new Promise((r) => setTimeout(r, 5)); // the crawler uses it
                    live.delete(proxy);
                    const rel = await replicas[(me + i + 1) % 3].call("POST", `/v1/leases/${g.body.lease.id}/release`, {
                        body: { outcome: "ok" },
                    });
                    assert.equal(rel.status, 200, JSON.stringify(rel.body));
                }
            }),
        );
        assert.ok(leased >= 600, `${leased} leases`);
    });

    test(`${backend.name} backend: kill -9 of the leader mid-scale: another leads within 10 s, leasing goes on, the stack converges`, async () => {
        const leader = await leaderOf(replicas);
        const survivors = replicas.filter((r) => r !== leader);
        const r = await leader.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 5 } });
        assert.equal(r.status, 202);
        await waitFor(
            "the scale to be running",
            async () =>
                (await leader.call("GET", `/v1/operations/${r.body.operation.id}`)).body.operation.status === "running",
            30_000,
            50,
        );
        // In the middle of it: the leader's engine runs the program, so it holds the stack's lock in the
        // backend (a lock file, a lock row), which the kill leaves for the next leader's recovery.
        await waitFor(
            "the leader's engine to be inside the update",
            () => engineUpdating(leader.child.pid!),
            60_000,
            5,
        );
        // Leases go on through the failover: a lease+release loop on the survivors, every answer recorded.
        let leasing = true;
        const statuses: number[] = [];
        const odd: unknown[] = [];
        const loop = (async () => {
            for (let i = 0; leasing; i++) {
                const s = survivors[i % 2];
                const g = await s.call("POST", "/v1/leases", { body: { pool: "web", ttlSeconds: 30 } });
                statuses.push(g.status);
                // Anything but 201/503 fails below: keep what it said, and the replica's error lines.
                if (g.status !== 201 && g.status !== 503)
                    odd.push({ status: g.status, body: g.body, errors: s.entries.filter((e) => e.level >= 50) });
                if (g.status === 201)
                    await s.call("POST", `/v1/leases/${g.body.lease.id}/release`, { body: { outcome: "ok" } });
                await new Promise((res) => setTimeout(res, 50));
            }
        })();
        const locksAtKill = backend.locks(p); // asserted once the leasing loop is over
        const killedAt = Date.now();
        leader.child.kill("SIGKILL");
        await leader.exited;
        replicas = survivors;
        // A scale request while the dead leader's lock has not run out: queued for the next leader (202 at once).
        const queued = await survivors[0].call("PUT", "/v1/pools/web/replicas", { body: { replicas: 5 } });
        assert.equal(queued.status, 202, JSON.stringify(queued.body));
        const next = await leaderOf(survivors, 15_000);
        const failoverMs = Date.now() - killedAt;
        console.log(`failover: leader kill -9 -> new leader agreed by both survivors in ${failoverMs} ms`);
        assert.ok(failoverMs < 10_000, `a new leader within 10 s (took ${failoverMs} ms)`);
        // The new leader recovers like a restart and converges to the stack file (5, written by the old leader).
        await waitFor(
            "5 members, as many processes, on both survivors",
            async () =>
                (await Promise.all(survivors.map(memberIds))).every((ids) => ids.length === 5) &&
                proxyProcesses(p).size === 5,
            180_000,
            250,
        );
        leasing = false;
        await loop;
        const granted = statuses.filter((s) => s === 201).length;
        console.log(`leases during the failover: ${granted} granted of ${statuses.length} asked`);
        assert.ok(granted > 0, "leases were granted during the failover");
        assert.ok(
            statuses.every((s) => s === 201 || s === 503),
            `only 201 or 503: ${[...new Set(statuses)]}; others: ${JSON.stringify(odd)}`,
        );
        // The killed leader's scale is in the new leader's journal, interrupted (read through either survivor).
        for (const s of survivors) {
            const old = (await s.call("GET", `/v1/operations/${r.body.operation.id}`)).body.operation;
            assert.equal(old?.status, "interrupted", JSON.stringify(old));
        }
        const applied = await settled(survivors[1], queued.body.operation.id);
        assert.equal(applied.status, "succeeded", `the request queued during the failover: ${JSON.stringify(applied)}`);
        const scaled = await next.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 5 } });
        assert.equal(scaled.status, 202, "the new leader takes scale requests");
        assert.equal((await settled(next, scaled.body.operation.id)).status, "succeeded");
        assert.equal(proxyProcesses(p).size, 5, "processes = outputs");
        const gc = cli(p, ["gc", "--json"]);
        assert.equal(gc.code, 0, gc.stderr);
        assert.deepEqual(JSON.parse(gc.stdout).orphans, [], "gc finds nothing");
        const unlocked = next.logs.filter((l) => l.includes("stale lock"));
        console.log(`the new leader's recovery: ${unlocked.length ? unlocked.join("; ") : "no stale lock removed"}`);
        assert.ok(locksAtKill.length > 0, `the killed leader held the stack's lock (${backend.name} backend)`);
        // Processes = the members listed = the stack outputs, no lock left in the backend (a file or a row),
        // no engine process of the killed leader, gc finds nothing (again, through the shared check).
        await assertNothingLeaked(p, next, leader.child.pid!, "after the failover: ", backend.locks);
    });
}
