/**
 * A scale request answered 202 while another operation runs waits `queued`; a stop before it starts
 * must not lose it (issue 19: "after a restart nothing is lost"). With a real `egress serve`:
 * - `kill -9` while the first operation runs and the second waits: the restarted service reads the
 *   running one as interrupted and applies the queued one under the id the client was given;
 * - SIGTERM in the same moment: the service finishes the running operation, exits, and the next start
 *   applies the queued one the same way;
 * - `kill -9` while a scale waits for the writer lock an `egress up` holds (the operation says whom it
 *   waits for): it applied nothing, so the next start carries it like a queued one;
 * - two replicas on a real redis-server: a request a follower queued and the leader took, `kill -9` of the
 *   leader: the survivor leads and applies it (the journal in the shared EGRESS_HOME);
 * - after each, the pool has the requested count, the stack file says so, and nothing leaked.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { loadStackConfig } from "../../src/config";
import { cli, killServices, procProject, ProcProject, serve, ServeProcess } from "../helpers/processes";
import * as path from "node:path";
import { holdWriterLock, killHard } from "../helpers/cli";
import { startRedis } from "../helpers/redis";
import { leaderOf } from "../helpers/replicas";
import { assertNothingLeaked } from "../helpers/restart-checks";
import { settled, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 6, cooldownSeconds: 0 }],
};
let p: ProcProject;

before(async () => {
    p = procProject("qr", config);
});
after(async () => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
});

const scale = (svc: ServeProcess, replicas: number) =>
    svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas } }).then((r) => {
        assert.equal(r.status, 202, JSON.stringify(r.body));
        return r.body.operation as { id: string; status: string };
    });

/** Waits for the convergence of the start at `since` (the journal also lists earlier starts' operations). */
async function converged(svc: ServeProcess, since: string) {
    await waitFor(
        "the start-up convergence",
        async () => {
            const ops = (await svc.call("GET", "/v1/operations")).body.operations as Record<string, string>[];
            const up = ops.find((o) => o.kind === "up" && o.createdAt >= since);
            return up?.status === "succeeded" && !ops.some((o) => o.status === "queued" || o.status === "running");
        },
        60_000,
        25,
    );
}

/** One operation running (a scale-up) and one queued behind it, as the client saw them. */
async function runningAndQueued(svc: ServeProcess, up: number, then: number) {
    const first = await scale(svc, up);
    await waitFor(
        "the first operation to run",
        async () => {
            const op = (await svc.call("GET", `/v1/operations/${first.id}`)).body.operation;
            return op.status === "running";
        },
        60_000,
        25,
    );
    const second = await scale(svc, then);
    assert.equal(second.status, "queued");
    assert.notEqual(second.id, first.id);
    return { first, second };
}

/** How a request queued before the stop reaches the next leader: from its journal, or from the store's queue. */
const CARRIED = (id: string) => (e: Record<string, unknown>) =>
    e.msg === "a scale request queued before the stop is applied now" && e.carried === id;
const RETAKEN = (id: string) => (e: Record<string, unknown>) =>
    e.msg === "scale requested (queued by a replica)" && e.operation === id;

/**
 * After the restart: the queued request applied under its id, the pool at `n`, nothing leaked. `via` are
 * the ways the request may have come back, each a log line of the replica that applied it.
 */
async function applied(svc: ServeProcess, id: string, n: number, deadPid: number, via = [CARRIED]) {
    const op = await settled(svc, id, 180_000);
    assert.equal(op.status, "succeeded", JSON.stringify(op));
    assert.equal(op.desired.web, n);
    assert.ok(
        svc.entries.some((e) => via.some((v) => v(id)(e))),
        "the carry-over is logged",
    );
    await waitFor(
        "the pool to settle",
        async () => {
            const ops = (await svc.call("GET", "/v1/operations")).body.operations as { status: string }[];
            return !ops.some((o) => o.status === "queued" || o.status === "running");
        },
        60_000,
        25,
    );
    assert.equal(loadStackConfig(p.dir, p.stack).pools[0].replicas, n, "the stack file holds the request");
    const members = await assertNothingLeaked(p, svc, deadPid);
    assert.equal(members.length, n);
}

test("kill -9 with a scale request queued: the next start applies it under its id", { timeout: 300_000 }, async () => {
    const t0 = new Date().toISOString();
    const svc = await serve(p);
    await converged(svc, t0);
    const { first, second } = await runningAndQueued(svc, 4, 2);
    svc.child.kill("SIGKILL");
    await svc.exited;

    const next = await serve(p);
    try {
        const cut = (await next.call("GET", `/v1/operations/${first.id}`)).body.operation;
        assert.equal(cut.status, "interrupted", "the running one was cut off");
        await applied(next, second.id, 2, svc.child.pid!);
    } finally {
        next.child.kill("SIGKILL");
        await next.exited;
    }
});

test(
    "SIGTERM with a scale request queued: the running one finishes, the next start applies the queued one",
    { timeout: 300_000 },
    async () => {
        const t0 = new Date().toISOString();
        const svc = await serve(p);
        await converged(svc, t0);
        const { first, second } = await runningAndQueued(svc, 5, 3);
        svc.child.kill("SIGTERM");
        assert.equal(await svc.exited, 0, "a graceful stop exits 0");
        assert.ok(
            svc.entries.some(
                (e) => e.msg === "scale request kept: the next start or leader applies it" && e.operation === second.id,
            ),
            "the stop says it kept the request",
        );

        const next = await serve(p);
        try {
            const done = (await next.call("GET", `/v1/operations/${first.id}`)).body.operation;
            assert.equal(done.status, "succeeded", "the running one finished before the exit");
            await applied(next, second.id, 3, svc.child.pid!);
        } finally {
            next.child.kill("SIGKILL");
            await next.exited;
        }
    },
);

test(
    "kill -9 while a scale waits for the writer lock an `egress up` holds: the next start applies it under its id",
    { timeout: 300_000 },
    async () => {
        const t0 = new Date().toISOString();
        const svc = await serve(p);
        await converged(svc, t0);
        const holder = await holdWriterLock(path.join(p.home, "run"), p.stack, "egress up");
        let id: string;
        // The tests share one stack: ask for a count it does not have now, whatever the ones before left.
        const before = p.replicas("web");
        const want = before === 3 ? 2 : 3;
        try {
            const op = await scale(svc, want);
            id = op.id;
            const waiting = await waitFor(
                "the scale to wait for the lock",
                async () => {
                    const o = (await svc.call("GET", `/v1/operations/${op.id}`)).body.operation;
                    return o.waitingForLock && o;
                },
                60_000,
                25,
            );
            assert.equal(waiting.status, "running");
            assert.equal(waiting.waitingForLock.holder, `pid ${holder.pid} (egress up)`, "it says whom it waits for");
            assert.equal(p.replicas("web"), before, "nothing applied: the stack file is untouched");
            svc.child.kill("SIGKILL");
            await svc.exited;
        } finally {
            await killHard(holder); // the next start finds its lock stale
        }
        const next = await serve(p);
        try {
            await applied(next, id, want, svc.child.pid!);
        } finally {
            next.child.kill("SIGKILL");
            await next.exited;
        }
    },
);

test(
    "two replicas: a request a follower queued, taken by the leader, survives the leader's kill -9",
    { timeout: 300_000 },
    async () => {
        const redis = await startRedis();
        const args = ["--store", redis.url];
        const t0 = new Date().toISOString();
        let replicas = [await serve(p, args), await serve(p, args)];
        try {
            const leader = await leaderOf(replicas);
            const follower = replicas.find((r) => r !== leader)!;
            await converged(leader, t0);
            const first = await scale(leader, 4);
            await waitFor(
                "the first operation to run",
                async () => {
                    const op = (await leader.call("GET", `/v1/operations/${first.id}`)).body.operation;
                    return op.status === "running";
                },
                60_000,
                25,
            );
            const second = await scale(follower, 2);
            assert.equal(second.status, "queued");
            await waitFor(
                "the leader to take the follower's request",
                () =>
                    leader.entries.some(
                        (e) => e.msg === "scale requested (queued by a replica)" && e.operation === second.id,
                    ),
                60_000,
                25,
            );
            leader.child.kill("SIGKILL");
            await leader.exited;
            replicas = [follower];
            assert.equal(await leaderOf(replicas, 15_000), follower, "the survivor leads");
            // The leader's journal may not have recorded the request when it died: the follower then takes
            // it again from the store's queue (whose entry goes only once the journal has it), under its id.
            await applied(follower, second.id, 2, leader.child.pid!, [CARRIED, RETAKEN]);
        } finally {
            for (const r of replicas) r.child.kill("SIGKILL");
            await Promise.all(replicas.map((r) => r.exited));
            await redis.cleanup();
        }
    },
);
