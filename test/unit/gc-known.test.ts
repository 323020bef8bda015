import { test } from "node:test";
import assert from "node:assert/strict";
import { knownToState } from "../../src/gc";
import type { ManagedThing } from "../../components/kind";

const thing = (type: string, name: string): ManagedThing =>
    ({ kind: "kubernetes", provider: "k8s", type, name, location: "ns", member: "web-0" }) as ManagedThing;

test("state knows a thing by an ID that is its name, ends with /<name>, or names it among several (comma-separated)", () => {
    const ids = new Set([
        "ns/web-0-abc1234",
        "ns/web-1-5f3e9a1c,ns/web-1-87272529",
        "projects/p/zones/z/instances/vm-1",
    ]);
    assert.equal(knownToState(thing("deployment", "web-0-abc1234"), ids), true);
    assert.equal(knownToState(thing("service", "web-0-abc1234"), ids), true);
    // A member handed over from an earlier release: its Deployment and its Service are named apart.
    assert.equal(knownToState(thing("deployment", "web-1-5f3e9a1c"), ids), true);
    assert.equal(knownToState(thing("service", "web-1-87272529"), ids), true);
    assert.equal(knownToState(thing("instance", "vm-1"), ids), true);
    for (const orphan of ["web-1", "web-0-abc", "87272529", "ns", "z"])
        assert.equal(knownToState(thing("service", orphan), ids), false, orphan);
});
