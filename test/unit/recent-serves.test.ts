/**
 * Which members lately served a client's (pool, session, target) (gateway/recent.ts), for POST /v1/blocks:
 * several per key, so a report naming the member of the blocked answer (`proxy`) finds it even when
 * other requests to the site were served after it; unset, the last one.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { RecentServes, reportServedBlock } from "../../src/service/gateway/recent";

const key = { client: "crawler", pool: "web", target: "shop.test" };

test("the member named is found among the key's recent serves; unset, the last one; another key's never", () => {
    let now = 1_000;
    const recent = new RecentServes(60_000, 100, () => now);
    recent.record(key, "web-0");
    now += 10;
    recent.record(key, "web-1");
    recent.record({ ...key, session: "s1" }, "web-2");
    assert.equal(recent.get(key)?.proxyId, "web-1");
    assert.equal(recent.get(key, "web-0")?.proxyId, "web-0");
    assert.equal(recent.get(key, "web-2"), undefined, "web-2 served another session");
    assert.equal(recent.get({ ...key, client: "other" }, "web-0"), undefined, "another token's serves are not ours");
    now += 60_001;
    assert.equal(recent.get(key, "web-1"), undefined, "past the window");
});

test("a key keeps its 16 latest members; a member served again moves to the end", () => {
    const recent = new RecentServes();
    for (let i = 0; i < 20; i++) recent.record(key, `web-${i}`);
    assert.equal(recent.get(key, "web-3"), undefined);
    assert.equal(recent.get(key, "web-4")?.proxyId, "web-4");
    recent.record(key, "web-4");
    assert.equal(recent.get(key)?.proxyId, "web-4");
});

test("a report naming a member that did not serve the key: refused, naming it; naming one that did: that one rests", async () => {
    const recent = new RecentServes();
    recent.record(key, "web-0");
    recent.record(key, "web-1");
    const benched: string[] = [];
    const fleet = { reportBlocked: (id: string) => (benched.push(id), Date.now() + 60_000) };
    const refused = await reportServedBlock(recent, fleet, key, "web-7");
    assert.equal(refused.ok, false);
    assert.match((refused as { message: string }).message, /through web-7 with this token/);
    const got = await reportServedBlock(recent, fleet, { ...key, target: "SHOP.test" }, "web-0");
    assert.deepEqual([got.ok, (got as { proxyId: string }).proxyId, benched], [true, "web-0", ["web-0"]]);
});
