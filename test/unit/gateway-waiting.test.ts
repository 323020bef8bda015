/**
 * The gateway's waiting line (src/service/gateway/waiting.ts) on its own: head first, oldest line first,
 * a store failure ends the wait at once, a lease granted after its waiter left goes back, the bound on
 * waiters and on the wait. Attempts are plain functions over a counter of free members.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { WaitingRoom } from "../../src/service/gateway/waiting";
import type { FleetAcquire } from "../../src/service/fleet/views";

const NONE: FleetAcquire = { ok: false, reason: "none-available", message: "busy", retryAfterSeconds: 1 };
const granted = (id: string): FleetAcquire =>
    ({ ok: true, lease: { id, proxy: { id: `m-${id}` } } }) as unknown as FleetAcquire;

/** Free members as a counter; each attempt takes one when there is one. */
function members(free = 0) {
    let n = 0;
    const pool = { free };
    const attempt = (): FleetAcquire => (pool.free > 0 ? (pool.free--, granted(`L${++n}`)) : NONE);
    return { pool, attempt };
}

const room = (over: Partial<ConstructorParameters<typeof WaitingRoom>[0]> = {}) => {
    const givenBack: string[] = [];
    const r = new WaitingRoom({
        waitMs: 2000,
        pollMs: 10_000, // kicks only, unless a test wants the poll
        giveBack: (g) => void givenBack.push(g.ok ? g.lease.id : "?"),
        ...over,
    });
    return { r, givenBack };
};

test("the head of a line is served first; the next waits for the next release", async () => {
    const { r } = room();
    const m = members();
    const order: string[] = [];
    const a = r.wait("web|*|site", m.attempt, NONE).then((g) => order.push(`a:${g.ok}`));
    const b = r.wait("web|*|site", m.attempt, NONE).then((g) => order.push(`b:${g.ok}`));
    assert.equal(r.hasLine("web|*|site"), true);
    m.pool.free = 1;
    r.kick();
    await a;
    assert.deepEqual(order, ["a:true"], "one free member: the head only");
    m.pool.free = 1;
    r.kick();
    await b;
    assert.deepEqual(order, ["a:true", "b:true"]);
    assert.equal(r.hasLine("web|*|site"), false);
    r.close();
});

test("the line whose head waited longest goes first, so one busy site cannot take every member", async () => {
    const { r } = room();
    const m = members();
    const got: string[] = [];
    const old = r.wait("web|*|old.example", m.attempt, NONE).then(() => got.push("old"));
    await new Promise((res) => setTimeout(res, 5));
    const busy = [1, 2, 3].map(() => r.wait("web|*|busy.example", m.attempt, NONE).then(() => got.push("busy")));
    m.pool.free = 1;
    r.kick();
    await old;
    assert.deepEqual(got, ["old"]);
    m.pool.free = 3;
    r.kick();
    await Promise.all(busy);
    r.close();
});

test("a store failure ends the wait at once with that error; it is not retried", async () => {
    const { r } = room();
    let calls = 0;
    const failing = () => {
        calls++;
        return Promise.reject(new Error("store down"));
    };
    const w = r.wait("web|*|t", failing, NONE);
    r.kick();
    await assert.rejects(w, /store down/);
    r.kick();
    await new Promise((res) => setTimeout(res, 5));
    assert.equal(calls, 1);
    assert.equal(r.hasLine("web|*|t"), false);
    r.close();
});

test("a lease granted after its waiter left (timed out, client gone) is given back", async () => {
    const { r, givenBack } = room({ waitMs: 20 });
    const alive = setInterval(() => undefined, 1000); // the room's timers are unref'd: something must hold the loop
    let release!: (g: FleetAcquire) => void;
    const slow = () => new Promise<FleetAcquire>((res) => (release = res));
    const w = r.wait("web|*|t", slow, NONE);
    r.kick(); // the attempt is in flight
    assert.deepEqual(await w, NONE, "the wait ran out: the last answer");
    release(granted("late"));
    await new Promise((res) => setTimeout(res, 5));
    assert.deepEqual(givenBack, ["late"]);
    clearInterval(alive);
    r.close();
});

test("a client that leaves takes its place out of the line; the bound on waiters answers at once", async () => {
    const { r } = room({ maxWaiting: 1 });
    const m = members();
    let leave!: () => void;
    let unwatched = false;
    const w = r.wait("web|*|t", m.attempt, NONE, (l) => {
        leave = l;
        return () => void (unwatched = true);
    });
    const t0 = Date.now();
    assert.deepEqual(await r.wait("web|*|t", m.attempt, NONE), NONE, "over maxWaiting: the first answer now");
    assert.ok(Date.now() - t0 < 100);
    leave();
    assert.deepEqual(await w, NONE);
    assert.equal(unwatched, true, "its watch on the client is undone");
    assert.equal(r.hasLine("web|*|t"), false);
    r.close();
});
