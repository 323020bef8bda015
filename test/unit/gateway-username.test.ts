/** The gateway's proxy-username grammar (src/service/gateway/username.ts): every form, and hostile input. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_USERNAME, parseUsername } from "../../src/service/gateway/username";
import { badUsername, okUsername } from "../helpers/username";

const ok = okUsername;
const bad = badUsername;

test("a pool, a session, a target, in either order", () => {
    assert.deepEqual(ok("web"), { pool: "web" });
    assert.deepEqual(ok("web_session_abc-1"), { pool: "web", session: "abc-1" });
    assert.deepEqual(ok("web_target_example.org"), { pool: "web", target: "example.org" });
    assert.deepEqual(ok("web_session_s1_target_shop.example.org"), {
        pool: "web",
        session: "s1",
        target: "shop.example.org",
    });
    assert.deepEqual(ok("web_target_example.org_session_s1"), { pool: "web", session: "s1", target: "example.org" });
    assert.deepEqual(ok("web_target_127.0.0.2"), { pool: "web", target: "127.0.0.2" });
});

test("a zone, alone or with the other options; a bad or repeated one is refused", () => {
    assert.deepEqual(ok("web_zone_europe-west1-b"), { pool: "web", where: { zone: "europe-west1-b" } });
    assert.deepEqual(ok("_zone_rack-2_session_s1"), { where: { zone: "rack-2" }, session: "s1" });
    assert.deepEqual(ok("web_target_a.example_zone_Rack.2:x"), {
        pool: "web",
        target: "a.example",
        where: { zone: "Rack.2:x" },
    });
    bad("web_zone_rack/1", /gives `zone` a value that is not/);
    bad(`web_zone_${"z".repeat(64)}`, /gives `zone` a value that is not/);
    bad("web_zone_a_zone_b", /gives `zone` twice/);
});

test("an empty pool part means any pool", () => {
    assert.deepEqual(ok(""), {});
    assert.deepEqual(ok("_session_k"), { session: "k" });
});

test("pool names with '-session-' and '-target-' in them stay pool names", () => {
    assert.deepEqual(ok("a-session-b"), { pool: "a-session-b" });
    assert.deepEqual(ok("a-session-b_session_c-target-d"), { pool: "a-session-b", session: "c-target-d" });
    assert.deepEqual(ok("x-target-y_target_z.example"), { pool: "x-target-y", target: "z.example" });
});

test("targets are lower-cased host names", () => {
    assert.deepEqual(ok("web_target_Example.ORG"), { pool: "web", target: "example.org" });
    for (const t of [
        "-a.org",
        "a-.org",
        "a..org",
        ".a.org",
        "a.org.",
        "a b",
        "a/b",
        "a%2eorg",
        "ex\u00e4mple.org",
        "a".repeat(64) + ".org",
    ])
        bad(`web_target_${t}`, /gives `target` a value that is not a host name/);
    bad(`web_target_${"a.".repeat(127)}a`, /gives `target` a value that is not a host name/); // 255 characters
});

test("bad pools, keys, options and repeats are refused with the reason", () => {
    bad("Web", /names pool "Web", which is not a pool name/);
    bad("-web", /not a pool name/);
    bad("web-", /not a pool name/);
    bad("we.b", /not a pool name/);
    bad("web_session", /option "session" without a value/);
    bad("web_session_a_target", /option "target" without a value/);
    bad("web__session_a", /empty option/);
    bad("web_session_", /gives `session` a value that is not/);
    bad("web_session_a/b", /gives `session` a value that is not/);
    bad(`web_session_${"k".repeat(129)}`, /gives `session` a value that is not/);
    bad("web_session_a_session_b", /gives `session` twice/);
    bad("web_target_a.org_target_b.org", /gives `target` twice/);
    bad(
        "web_Session_a",
        /option "Session", which is no option \(session, target, zone, retries, ttl, strict, rotate\)/,
    );
});

test("hostile input: huge, control characters, unicode, separators, JSON", () => {
    const huge = bad("w".repeat(MAX_USERNAME + 1), /is longer than 400 characters/);
    assert.ok(huge.length < 300, "a huge username is not echoed whole");
    const nul = bad("web\u0000_session_a", /not a pool name/);
    assert.ok(nul.includes("\\u0000"), "control characters are escaped in the message");
    bad("web\r\nX-Injected: 1", /not a pool name/);
    bad("wéb", /not a pool name/);
    bad("web_session_ä", /gives `session` a value/);
    bad("web_session_a\nb", /gives `session` a value/);
    bad('web"_session_a', /not a pool name/);
    bad("web_target_a.org\u0000", /gives `target` a value that is not a host name/);
    bad("_", /empty option/);
    bad("___", /empty option/);
    bad("____", /empty option/);
    bad("web_target_[::1]", /gives `target` a value that is not a host name/);
    bad("___proto___x", /empty option/);
    bad("web_Proto_x", /option "Proto", which is no option/);
    assert.deepEqual(ok("web_session_constructor"), { pool: "web", session: "constructor" });
    // Every single character as a pool or session: never a throw, always a clear answer.
    for (let c = 0; c < 0x3000; c++) {
        const ch = String.fromCharCode(c);
        for (const raw of [ch, `web_session_${ch}`, `web_target_${ch}`]) {
            const r = parseUsername(raw);
            if (!r.ok) assert.ok(r.message.length < 500);
        }
    }
});
