import { test } from "node:test";
import assert from "node:assert/strict";
import { LiveLeases } from "../../src/service/store/live-leases";
import type { Lease } from "../../src/service/leases/types";

const lease = (id: string, proxyId: string, leasedAt: number): Lease => ({
    id,
    proxyId,
    pool: "p",
    leasedAt,
    expiresAt: leasedAt + 60_000,
});

test("one lease per member: remembered, found by member, forgotten", () => {
    const v = new LiveLeases();
    v.remember(lease("a", "m-1", 2));
    v.remember(lease("b", "m-2", 1));
    assert.equal(v.ofMember("m-1")?.id, "a");
    assert.deepEqual(
        v.all().map((l) => l.id),
        ["b", "a"],
    );
    v.remember(lease("a", "m-1", 2)); // again: still one
    v.forget("a");
    assert.equal(v.ofMember("m-1"), undefined);
    v.forget("a"); // unknown by now: nothing happens
    v.forget("nope");
    assert.deepEqual(
        v.all().map((l) => l.id),
        ["b"],
    );
});

test("shared leases on one member: the oldest remembered answers until it is forgotten", () => {
    const v = new LiveLeases();
    v.remember(lease("s1", "m-1", 1));
    v.remember(lease("s2", "m-1", 2));
    v.remember(lease("s3", "m-1", 3));
    assert.equal(v.ofMember("m-1")?.id, "s1");
    v.forget("s1");
    assert.equal(v.ofMember("m-1")?.id, "s2");
    v.forget("s2");
    v.forget("s3");
    assert.equal(v.ofMember("m-1"), undefined);
    v.remember(lease("s4", "m-1", 4));
    assert.equal(v.ofMember("m-1")?.id, "s4");
});

test("forgetMember drops one lease or several; replace rebuilds from the VIEW rows", () => {
    const v = new LiveLeases();
    v.remember(lease("a", "m-1", 1));
    v.remember(lease("s1", "m-2", 2));
    v.remember(lease("s2", "m-2", 3));
    v.forgetMember("m-1");
    v.forgetMember("m-2");
    assert.deepEqual(v.all(), []);
    v.replace([
        ["s1", "m-2", "p", "", "", "5", "65000"],
        ["s2", "m-2", "p", "example.com", "sess", "6", "66000"],
    ]);
    assert.equal(v.ofMember("m-2")?.id, "s1");
    assert.deepEqual(v.all()[1], {
        id: "s2",
        proxyId: "m-2",
        pool: "p",
        target: "example.com",
        session: "sess",
        leasedAt: 6,
        expiresAt: 66000,
    });
    v.forget("s1");
    assert.equal(v.ofMember("m-2")?.id, "s2");
});
