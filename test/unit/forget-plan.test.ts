/** Which resources `egress forget` drops: the member component and everything under it; refusals name what refers to it. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemberNotInStateError, planForget } from "../../src/engine/forget";

const S = "urn:pulumi:dev::egress::";
const pool = `${S}egress:index:ProxyPool::web`;
const member = (m: string) => `${S}egress:index:ProxyPool$egress:kvm:KvmProxy::${m}`;
const child = (m: string, t: string, n: string) =>
    `${S}egress:index:ProxyPool$egress:kvm:KvmProxy$pulumi-nodejs:dynamic/egress:kvm:${t}::${n}`;
const resources = [
    { urn: `${S}pulumi:pulumi:Stack::egress-dev`, type: "pulumi:pulumi:Stack" },
    { urn: pool, type: "egress:index:ProxyPool", parent: `${S}pulumi:pulumi:Stack::egress-dev` },
    ...["web-0", "web-1", "web-10"].flatMap((m) => [
        { urn: member(m), type: "egress:kvm:KvmProxy", parent: pool },
        {
            urn: child(m, "Overlay", `${m}-disk`),
            type: "pulumi-nodejs:dynamic/egress:kvm:Overlay",
            parent: member(m),
            custom: true,
            id: `${m}-disk-id`,
        },
        {
            urn: child(m, "Domain", `${m}-vm`),
            type: "pulumi-nodejs:dynamic/egress:kvm:Domain",
            parent: member(m),
            custom: true,
            dependencies: [child(m, "Overlay", `${m}-disk`)],
        },
    ]),
];

test("a member's subtree, by parent, and nothing of a member with a longer name", () => {
    const { subtree, referrers } = planForget(resources, "web-1");
    assert.deepEqual(
        subtree.map((r) => r.urn),
        [member("web-1"), child("web-1", "Overlay", "web-1-disk"), child("web-1", "Domain", "web-1-vm")],
    );
    assert.deepEqual(referrers, []);
});

test("unknown members are refused listing the known ones; outside references are reported", () => {
    assert.throws(
        () => planForget(resources, "web-2"),
        (e: Error) => e instanceof MemberNotInStateError && /members: web-0, web-1, web-10/.test(e.message),
    );
    assert.throws(() => planForget(resources, "web"), MemberNotInStateError, "a pool is not a member");
    const odd = [
        ...resources,
        { urn: `${S}other::x`, type: "other", propertyDependencies: { a: [child("web-0", "Domain", "web-0-vm")] } },
    ];
    assert.deepEqual(planForget(odd, "web-0").referrers, [`${S}other::x`]);
});
