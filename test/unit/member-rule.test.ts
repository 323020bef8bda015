/**
 * The one rule for "which resources are member X" (src/engine/state.ts): a member is a live direct child
 * component of a ProxyPool, named by its id. Repair targets, forget and recovery all use it, so a member
 * whose update was cut short before its `member` output was recorded is still found by each of them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { memberTargets } from "../../src/engine/member-urns";
import { planForget } from "../../src/engine/forget";
import { memberComponents, type StateResource } from "../../src/engine/state";

const S = "urn:pulumi:s::egress::";
const POOL = `${S}egress:index:ProxyPool::web`;
const comp = (id: string, extra: Partial<StateResource> = {}): StateResource => ({
    urn: `${S}egress:index:ProxyPool$egress:local:LocalProxy::${id}`,
    type: "egress:local:LocalProxy",
    custom: false,
    parent: POOL,
    ...extra,
});
const proc = (id: string): StateResource => ({
    urn: `${S}egress:index:ProxyPool$egress:local:LocalProxy$pulumi-nodejs:dynamic:Resource::${id}-process`,
    type: "pulumi-nodejs:dynamic:Resource",
    custom: true,
    parent: comp(id).urn,
    id: `s-${id}`,
});
const state: StateResource[] = [
    { urn: `${S}pulumi:pulumi:Stack::egress-s`, type: "pulumi:pulumi:Stack", custom: false },
    { urn: POOL, type: "egress:index:ProxyPool", custom: false },
    comp("web-0", { outputs: { member: { id: "web-0" } } }),
    proc("web-0"),
    comp("web-1"), // its update was cut short: the process exists, the component's output was never recorded
    proc("web-1"),
    comp("web-2", { delete: true }), // replaced, pending deletion: not a member
];

test("a member cut short before its output was recorded is a repair target, with what to replace", () => {
    const t = memberTargets(state, ["web-0", "web-1", "web-2"]);
    assert.deepEqual(t.missing, ["web-2"]);
    assert.deepEqual(t.found.get("web-1"), { component: comp("web-1").urn, replace: [proc("web-1").urn] });
    assert.deepEqual(t.found.get("web-0"), { component: comp("web-0").urn, replace: [proc("web-0").urn] });
});

test("forget and the repair targets see the same members", () => {
    assert.deepEqual(
        memberComponents(state).map((r) => r.urn),
        [comp("web-0").urn, comp("web-1").urn],
    );
    assert.deepEqual(
        planForget(state, "web-1").subtree.map((r) => r.urn),
        [comp("web-1").urn, proc("web-1").urn],
    );
});
