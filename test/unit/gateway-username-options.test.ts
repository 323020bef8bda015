/**
 * The gateway's username options table (src/service/gateway/username-options.ts): every option, its
 * argument rules and cross rules, label selectors, hostile input, and docs/api.md holding the table the
 * code generates (one source for the parser, `GRAMMAR` and the docs).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { GRAMMAR, MAX_USERNAME, parseUsername } from "../../src/service/gateway/username";
import { OPTIONS, optionsMarkdown } from "../../src/service/gateway/username-options";
import { RESERVED_LABEL_KEYS } from "../../src/model/labels";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { parseEgressConfig, problemLines } from "./config-fixtures";
import * as os from "node:os";
import { badUsername, okUsername } from "../helpers/username";

const ok = okUsername;
const bad = badUsername;

test("docs/api.md holds the options table the code generates", () => {
    const md = fs.readFileSync(path.join(PACKAGE_ROOT, "docs/api.md"), "utf8");
    const m = /<!-- username-options:start[^>]*-->\n([\s\S]*?)\n<!-- username-options:end -->/.exec(md);
    assert.ok(m, "docs/api.md has the username-options markers");
    assert.equal(
        m[1],
        optionsMarkdown(),
        "regenerate: node -e 'console.log(require(\"./dist/src/service/gateway/username-options\").optionsMarkdown())'",
    );
    for (const o of OPTIONS) assert.ok(GRAMMAR.includes(`[_${o.name}`), `GRAMMAR names ${o.name}`);
});

test("no pool label may be called as an option (the model's reserved list is the table's names)", () => {
    assert.deepEqual([...RESERVED_LABEL_KEYS].sort(), OPTIONS.map((o) => o.name).sort());
});

test("_ttl_: seconds, minutes or hours; needs a session; bad values refused", () => {
    assert.deepEqual(ok("web_session_s1_ttl_30s"), { pool: "web", session: "s1", ttlSeconds: 30 });
    assert.deepEqual(ok("web_ttl_10m_session_s1"), { pool: "web", session: "s1", ttlSeconds: 600 });
    assert.equal(ok("web_session_s1_ttl_2h").ttlSeconds, 7200);
    for (const v of ["0s", "10", "10d", "1.5m", "-1s", "s", "100000s", "10S", "１０s"])
        bad(`web_session_s1_ttl_${v}`, /gives `ttl` a value that is not 1–99999 followed by s, m or h/);
    bad("web_ttl_10s", /gives `ttl` without `session`/);
    bad("web_session_a_ttl_1s_ttl_2s", /gives `ttl` twice/);
});

test("_strict and _rotate: flags of a session, not together, not twice", () => {
    assert.deepEqual(ok("web_session_s1_strict"), { pool: "web", session: "s1", strict: true });
    assert.deepEqual(ok("_rotate_session_s1"), { session: "s1", rotate: true });
    assert.deepEqual(ok("web_session_s1_strict_ttl_5m_country_de"), {
        pool: "web",
        session: "s1",
        strict: true,
        ttlSeconds: 300,
        where: { country: "de" },
    });
    bad("web_strict", /gives `strict` without `session`/);
    bad("web_rotate", /gives `rotate` without `session`/);
    bad("web_session_s1_strict_rotate", /gives both `strict` and `rotate`: a strict session never moves/);
    bad("web_session_s1_strict_strict", /gives `strict` twice/);
    // A flag takes no value: what follows it is the next option.
    bad("web_session_s1_strict_yes", /option "yes" without a value/);
});

test("label selectors: any other word is a label, zone is one of them", () => {
    assert.deepEqual(ok("web_country_de"), { pool: "web", where: { country: "de" } });
    assert.deepEqual(ok("_country_DE_tier_residential_zone_a"), {
        where: { country: "DE", tier: "residential", zone: "a" },
    });
    assert.deepEqual(ok("web_constructor_x_proto_y"), { pool: "web", where: { constructor: "x", proto: "y" } });
    bad("web_country_de_country_fr", /gives `country` twice/);
    bad("web_country_de/x", /option "country", which is no option .* needs a label name of/);
    bad("web_Country_de", /option "Country", which is no option/);
    bad(`web_${"k".repeat(32)}_v`, /which is no option/);
    bad(`web_country_${"v".repeat(64)}`, /which is no option/);
    bad("web_country", /option "country" without a value/);
    bad("web_1abc_x", /which is no option/);
});

test("hostile input: long, unicode, many options, prototype words", () => {
    bad("w".repeat(MAX_USERNAME + 1), /is longer than 400 characters/);
    const many = `web${"_a_b".repeat(99)}`; // 399 characters, one label repeated
    bad(many, /gives `a` twice/);
    const labels = `web${Array.from({ length: 40 }, (_, i) => `_l${i}_v`).join("")}`;
    assert.equal(
        Object.keys(ok(labels).where!).length,
        40,
        "the parser takes any number; the fleet refuses unknown ones",
    );
    bad("web_country_dé", /which is no option/);
    bad("web_ßtrict_x", /which is no option/);
    bad("web_session_s1_ttl_10s\u200b", /gives `ttl` a value/);
    bad("web_session_s1_strict\u0000", /without a value/);
    assert.deepEqual(ok("web___proto___x".replace(/_{3}/g, "_")), { pool: "web", where: { proto: "x" } });
    const p = ok("web_toString_x".toLowerCase());
    assert.deepEqual(p, { pool: "web", where: { tostring: "x" } });
    assert.equal(Object.getPrototypeOf(ok("web_hasownproperty_x").where), Object.prototype);
    for (let c = 0x80; c < 0x2100; c += 7) {
        const r = parseUsername(`web_session_s1_ttl_1${String.fromCharCode(c)}`);
        assert.ok(!r.ok && r.message.length < 700);
    }
});

test("a pool's labels are validated at load, naming the path and the rule", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-labels-"));
    const config = (labels: unknown) => ({
        providers: { local: { type: "local" } },
        pools: [{ name: "a", provider: "local", replicas: 1, labels }],
    });
    assert.deepEqual(parseEgressConfig(config({ country: "de", tier: "res-1" }), root).pools[0].labels, {
        country: "de",
        tier: "res-1",
    });
    const lines = (l: unknown) => problemLines(config(l), root).join("\n");
    assert.match(
        lines({ Country: "de" }),
        /egress:pools\[0\]\.labels\.Country: label names must be 1–31 of lower-case/,
    );
    assert.match(lines({ country: "d e" }), /egress:pools\[0\]\.labels\.country: label values must be 1–63 of letters/);
    assert.match(lines({ country: "d_e" }), /label values must be/);
    assert.match(lines({ session: "x" }), /egress:pools\[0\]\.labels\.session: label name is reserved/);
    assert.match(lines({ zone: "x" }), /labels\.zone: label name is reserved/);
    assert.match(lines(["de"]), /egress:pools\[0\]\.labels/);
});
