/** Members from a checkpoint: registered `member` outputs, else identity inputs plus a created child's address. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { membersOf } from "../../src/engine/checkpoint";

const identity = (index: number) => ({
    id: `p-${index}`,
    pool: "p",
    provider: "local",
    kind: "local",
    index,
    port: 3128,
    zone: "local",
});
const comp = (index: number, extra: object = {}) => ({
    urn: `urn:pulumi:s::egress::egress:local:LocalProxy::p-${index}`,
    type: "egress:local:LocalProxy",
    inputs: { identity: identity(index) },
    ...extra,
});
const child = (index: number, outputs: Record<string, unknown>, extra: object = {}) => ({
    urn: `urn:pulumi:s::egress::egress:local:LocalProxy$proc::p-${index}-process`,
    type: "proc",
    parent: comp(index).urn,
    id: `s-p-${index}`,
    outputs,
    ...extra,
});

test("a recorded member output wins; a cut-short member is rebuilt from its identity and its child's address", () => {
    const members = membersOf([
        comp(0, {
            outputs: { member: { ...identity(0), host: "127.0.0.1", port: 40000, url: "http://127.0.0.1:40000" } },
        }),
        child(0, { host: "127.0.0.1", port: 40000 }),
        comp(1), // interrupted: the child exists, the component's output never came
        child(1, { host: "127.0.0.1", port: 40001 }),
        comp(2), // interrupted before its child was created: nothing runs
        comp(3), // a KVM-like child: an address under another name, the port from the plan
        child(3, { ipAddress: "10.0.0.7" }),
        comp(4),
        child(4, { host: "127.0.0.1", port: 40004 }, { delete: true }), // replaced and pending deletion
    ]);
    assert.deepEqual(
        members.map((m) => [m.id, m.url]),
        [
            ["p-0", "http://127.0.0.1:40000"],
            ["p-1", "http://127.0.0.1:40001"],
            ["p-3", "http://10.0.0.7:3128"],
        ],
    );
});

test("a child without an address yet gives a listed member with no URL (still provisioning)", () => {
    const [m] = membersOf([comp(5), child(5, {})]);
    assert.equal(m.id, "p-5");
    assert.equal(m.host, "");
    assert.equal(m.url, "");
});
