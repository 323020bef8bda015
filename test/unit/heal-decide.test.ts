/** The reconcile loop's rules as pure functions: member facts and time in, decisions out. */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    afterRepair,
    backoffMs,
    Decision,
    decideRepairs,
    DecideInput,
    MemberFacts,
    MemberHistory,
} from "../../src/service/control/heal/decide";
import { memberTargets } from "../../src/engine/member-urns";

const NOW = 1_000_000_000;
const member = (id: string, over: Partial<MemberFacts> = {}): MemberFacts => ({
    id,
    pool: id.split("-")[0],
    provider: "local",
    index: Number(id.split("-")[1]),
    health: "healthy",
    healthSince: NOW - 3_600_000,
    ...over,
});
const input = (members: MemberFacts[], over: Partial<DecideInput> = {}): DecideInput => ({
    now: NOW,
    members,
    pools: {
        web: { replaceUnhealthyAfterSeconds: 300, maxSurge: 1 },
        api: { replaceUnhealthyAfterSeconds: 300, maxSurge: 2 },
    },
    history: new Map(),
    providerDown: new Map(),
    ...over,
});
const brief = (ds: Decision[]) => ds.map((d) => `${d.member}:${d.reason}:${d.action === "repair" ? "repair" : d.skip}`);

test("healthy and unknown members need nothing; a gone member is repaired at once", () => {
    const ds = decideRepairs(
        input([
            member("web-0"),
            member("web-1", { health: "unknown", healthSince: NOW - 10_000_000 }),
            member("web-2", { gone: "no process of local proxy svc-web-2 is running" }),
        ]),
    );
    assert.deepEqual(ds, [
        {
            member: "web-2",
            pool: "web",
            reason: "gone",
            detail: "no process of local proxy svc-web-2 is running",
            action: "repair",
        },
    ]);
});

test("unhealthy: repaired once it lasted replaceUnhealthyAfterSeconds, not a millisecond before; 0 = never", () => {
    const just = member("web-0", { health: "unhealthy", healthSince: NOW - 300_000, lastError: "ECONNREFUSED" });
    const almost = member("web-1", { health: "unhealthy", healthSince: NOW - 299_999 });
    const ds = decideRepairs(
        input([just, almost], { pools: { web: { replaceUnhealthyAfterSeconds: 300, maxSurge: 5 } } }),
    );
    assert.deepEqual(brief(ds), ["web-0:unhealthy:repair"]);
    assert.equal(ds[0].detail, "unhealthy for 300 s (limit 300 s); last: ECONNREFUSED");
    const never = decideRepairs(
        input([member("web-0", { health: "unhealthy", healthSince: 0 })], {
            pools: { web: { replaceUnhealthyAfterSeconds: 0, maxSurge: 1 } },
        }),
    );
    assert.deepEqual(never, []);
    // 0 turns off the unhealthy rule only: a gone member of that pool is still repaired.
    const gone = decideRepairs(
        input([member("web-0", { gone: "dead" })], {
            pools: { web: { replaceUnhealthyAfterSeconds: 0, maxSurge: 1 } },
        }),
    );
    assert.deepEqual(brief(gone), ["web-0:gone:repair"]);
});

test("unhealthy time before the last successful repair does not count (the monitor's state outlives a replacement)", () => {
    const m = member("web-0", { health: "unhealthy", healthSince: NOW - 3_600_000 });
    const history = new Map<string, MemberHistory>([["web-0", { failures: 0, repairedAt: NOW - 60_000 }]]);
    assert.deepEqual(decideRepairs(input([m], { history })), []);
    history.set("web-0", { failures: 0, repairedAt: NOW - 300_000 });
    assert.deepEqual(brief(decideRepairs(input([m], { history }))), ["web-0:unhealthy:repair"]);
});

test("maxSurge per pool: gone first, then the longest unhealthy, then by index; other pools have their own budget", () => {
    const ds = decideRepairs(
        input([
            member("web-0", { health: "unhealthy", healthSince: NOW - 900_000 }),
            member("web-1", { health: "unhealthy", healthSince: NOW - 1_900_000 }),
            member("web-3", { gone: "dead" }),
            member("web-2", { gone: "dead" }),
            member("api-0", { gone: "dead" }),
            member("api-1", { gone: "dead" }),
            member("api-2", { gone: "dead" }),
        ]),
    );
    assert.deepEqual(brief(ds), [
        "api-0:gone:repair",
        "api-1:gone:repair",
        "api-2:gone:max-surge",
        "web-2:gone:repair",
        "web-3:gone:max-surge",
        "web-1:unhealthy:max-surge",
        "web-0:unhealthy:max-surge",
    ]);
    const skipped = ds.find((d) => d.member === "web-3")!;
    assert.equal(skipped.action === "skip" && skipped.why, "pool `web` repairs at most 1 member at once (maxSurge)");
});

test("backoff: a member whose repair failed waits until retryAt, and does not use up the pool's surge meanwhile", () => {
    const history = new Map<string, MemberHistory>([["web-0", { failures: 2, retryAt: NOW + 90_000 }]]);
    const ds = decideRepairs(
        input([member("web-0", { gone: "dead" }), member("web-1", { gone: "dead" })], { history }),
    );
    assert.deepEqual(brief(ds), ["web-0:gone:backoff", "web-1:gone:repair"]);
    const d = ds[0];
    assert.ok(d.action === "skip");
    assert.equal(d.until, NOW + 90_000);
    assert.equal(d.why, "2 failed repairs; next try in 90 s");
    // At retryAt it is tried again.
    assert.deepEqual(brief(decideRepairs(input([member("web-0", { gone: "dead" })], { history, now: NOW + 90_000 }))), [
        "web-0:gone:repair",
    ]);
});

test("provider down: nothing of its members is repaired, the reason is said; other providers go on", () => {
    const ds = decideRepairs(
        input([member("web-0", { gone: "dead" }), member("web-1", { gone: "dead", provider: "other" })], {
            providerDown: new Map([["local", "localhost: bind: cannot bind a loopback port"]]),
            pools: { web: { replaceUnhealthyAfterSeconds: 300, maxSurge: 2 } },
        }),
    );
    assert.deepEqual(brief(ds), ["web-0:gone:provider-unhealthy", "web-1:gone:repair"]);
    assert.ok(
        ds[0].action === "skip" &&
            ds[0].why === "provider `local` is not healthy: localhost: bind: cannot bind a loopback port",
    );
});

test("members of pools no longer configured are left to scaling", () => {
    assert.deepEqual(decideRepairs(input([member("old-0", { gone: "dead" })])), []);
});

test("backoff doubles from 1 min to at most 30 min; success resets it and records the repair", () => {
    assert.deepEqual(
        [1, 2, 3, 4, 5, 6, 7, 50].map((n) => backoffMs(n) / 60_000),
        [1, 2, 4, 8, 16, 30, 30, 30],
    );
    let h = afterRepair(undefined, false, NOW);
    assert.deepEqual(h, { failures: 1, retryAt: NOW + 60_000 });
    h = afterRepair(h, false, NOW + 60_000);
    assert.deepEqual(h, { failures: 2, retryAt: NOW + 60_000 + 120_000 });
    assert.deepEqual(afterRepair(h, true, NOW + 500_000), { failures: 0, repairedAt: NOW + 500_000 });
    assert.deepEqual(afterRepair(undefined, false, 0, { baseMs: 500, maxMs: 1500 }), { failures: 1, retryAt: 500 });
    assert.equal(backoffMs(4, { baseMs: 500, maxMs: 1500 }), 1500);
});

test("member targets: the component to target and the custom resources below it to replace; unknown ids reported", () => {
    const S = "urn:pulumi:s::egress::";
    const resources = [
        { urn: `${S}pulumi:pulumi:Stack::egress-s`, type: "pulumi:pulumi:Stack", custom: false },
        { urn: `${S}pulumi:providers:pulumi-nodejs::default`, type: "pulumi:providers:pulumi-nodejs", custom: true },
        { urn: `${S}egress:index:ProxyPool::web`, type: "egress:index:ProxyPool", custom: false },
        {
            urn: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-0`,
            type: "egress:local:LocalProxy",
            custom: false,
            parent: `${S}egress:index:ProxyPool::web`,
            outputs: { member: { id: "web-0" } },
        },
        {
            urn: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-1`,
            type: "egress:local:LocalProxy",
            custom: false,
            parent: `${S}egress:index:ProxyPool::web`,
            outputs: { member: { id: "web-1" } },
        },
        {
            urn: `${S}x$p::web-0-process`,
            type: "p",
            custom: true,
            parent: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-0`,
        },
        {
            urn: `${S}x$c::web-0-inner`,
            type: "c",
            custom: false,
            parent: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-0`,
        },
        { urn: `${S}x$c$p::web-0-disk`, type: "p", custom: true, parent: `${S}x$c::web-0-inner` },
        {
            urn: `${S}x$p::web-1-process`,
            type: "p",
            custom: true,
            parent: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-1`,
        },
        {
            urn: `${S}x$p::web-1-old`,
            type: "p",
            custom: true,
            parent: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-1`,
            delete: true,
        },
    ];
    const t = memberTargets(resources, ["web-0", "web-1", "web-7"]);
    assert.deepEqual(t.missing, ["web-7"]);
    assert.deepEqual(t.found.get("web-0"), {
        component: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-0`,
        replace: [`${S}x$p::web-0-process`, `${S}x$c$p::web-0-disk`],
    });
    assert.deepEqual(t.found.get("web-1"), {
        component: `${S}egress:index:ProxyPool$egress:local:LocalProxy::web-1`,
        replace: [`${S}x$p::web-1-process`],
    });
});
