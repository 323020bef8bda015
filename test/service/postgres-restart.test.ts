/**
 * Issue 35's bad day: the Pulumi backend (a real PostgreSQL 15, Pulumi's postgres:// backend) restarts
 * for 3 s (SIGKILL, then started again) while a scale runs, as in the chaos run (bench/chaos.ts) where
 * one scale failed so. Two moments, one scale each:
 * 1. as the engine's `pulumi up` starts: the CLI reads the stack and lists its locks then, and fails when
 *    the backend does not answer. The operation must end `succeeded`, its events showing the retry
 *    (src/fleet-ops/engine-retry.ts), the service warning once.
 * 2. at the update's first create: the engine itself retries its checkpoint writes (Pulumi's diy backend,
 *    about 10 tries from 1 s apart), so the step waits and the update goes on; the scale succeeds too.
 * Afterwards nothing a cut-off run could leave is left: processes = outputs, no lock row, `gc` finds nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    ADMIN_TOKEN,
    engineProcessesOf,
    postgresProject,
    serve,
    type ServeProcess,
    withServiceLogs,
} from "../helpers/processes";
import { assertNothingLeaked } from "../helpers/restart-checks";
import { readSse, type SseEvent } from "../helpers/sse";
import { settled, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 6, cooldownSeconds: 0 }],
};
const DOWN_MS = 3_000;
const db = postgresProject("pgr", config);

/** SIGKILL of PostgreSQL, and a start DOWN_MS later. */
async function restartPostgres(): Promise<void> {
    await db.pg.kill();
    await new Promise((res) => setTimeout(res, DOWN_MS));
    await db.pg.start();
}

/**
 * Scales `web` to `replicas`; restarts PostgreSQL once `cut` says so (asked for each event of the
 * operation, and every 10 ms); returns the settled operation and its events.
 */
async function scaleThroughRestart(
    svc: ServeProcess,
    replicas: number,
    cut: (e?: SseEvent) => boolean,
): Promise<{ op: any; events: SseEvent[]; retries: string[] }> {
    const r = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const id = r.body.operation.id as string;
    let restart: Promise<void> | undefined;
    const check = (e?: SseEvent) => {
        if (!restart && cut(e)) restart = restartPostgres();
    };
    const poll = setInterval(check, 10);
    try {
        const stream = await withServiceLogs(svc, readSse(svc.url, id, { token: ADMIN_TOKEN, onEvent: check }));
        assert.ok(restart, `the moment to restart PostgreSQL came: ${JSON.stringify(stream.events)}`);
        await restart;
        const op = await settled(svc, id, 120_000);
        const retries = stream.events
            .filter((e) => e.type === "progress" && e.data.kind === "diagnostic")
            .map((e) => e.data.message as string)
            .filter((m) => /retrying in/.test(m));
        console.log(`scale to ${replicas}: ${op.status}; retries in its events:\n  ${retries.join("\n  ") || "none"}`);
        return { op, events: stream.events, retries };
    } finally {
        clearInterval(poll);
    }
}

test(
    "PostgreSQL restarts for 3 s as a scale's `up` starts, and in the middle of another: both succeed",
    { timeout: 300_000 },
    async () => {
        const svc = await serve(db.p);
        try {
            const members = async () => ((await svc.call("GET", "/v1/proxies")).body.proxies as unknown[]).length;
            await waitFor("the start-up convergence to 1", async () => (await members()) === 1, 120_000, 25);
            const pid = svc.child.pid!;

            // 1. The engine's `pulumi up` process has started: it is about to read the stack and take its lock.
            const first = await scaleThroughRestart(svc, 3, () =>
                engineProcessesOf(pid).some((e) => / up$/.test(e.command)),
            );
            assert.equal(first.op.status, "succeeded", JSON.stringify(first.op));
            assert.ok(first.retries.length >= 1, "the retry shows in the operation's events");
            assert.match(
                first.retries[0],
                /^backend unreachable, retrying in 500 ms \(attempt 1\): .*cannot be reached/,
            );
            assert.doesNotMatch(first.retries.join("\n"), new RegExp(db.pg.password), "no password in the events");
            const warned = svc.entries.filter(
                (e) => e.operation === first.op.id && e.level === 40 && /retrying/.test(e.msg),
            );
            assert.deepEqual(
                warned.map((e) => e.msg),
                ["the Pulumi backend is unreachable; retrying"],
                "warned once for the operation",
            );
            assert.equal(await members(), 3);

            // 2. The update's first create step: the engine's checkpoint writes wait for the backend.
            const second = await scaleThroughRestart(
                svc,
                5,
                (e) => e?.type === "progress" && e.data.kind === "resource-start" && e.data.op === "create",
            );
            assert.equal(second.op.status, "succeeded", JSON.stringify(second.op));
            assert.equal(await members(), 5);

            await assertNothingLeaked(db.p, svc, pid);
            assert.deepEqual(db.pg.keys("locks"), [], "no lock row left");
        } finally {
            svc.child.kill("SIGTERM");
            await svc.exited;
        }
    },
);
