/**
 * The gateway's browser doors (src/service/gateway/doors.ts, issue 36): `--gateway-allow` rules and how
 * source addresses match them (IPv4, IPv6, IPv4-mapped IPv6), `--gateway-sticky-ports` ranges, and the
 * CLI's errors, which name the flag and the rule (src/cli/serve-flags.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
    allowProblems,
    MAX_STICKY_PORTS,
    parseAllowRule,
    parseStickyRange,
    SourceAllowList,
    stickyClash,
    stickyPorts,
} from "../../src/service/gateway/doors";
import { doorFlags, listFlag } from "../../src/cli/serve-flags";
import type { StoredToken } from "../../src/service/http/auth";

const token = (name: string, scopes: StoredToken["scopes"]): StoredToken => ({ name, sha256: "0".repeat(64), scopes });

test("an allow rule: a CIDR or one address, a token name, an optional pool", () => {
    assert.deepEqual(parseAllowRule("10.0.0.0/8=crawler:web"), {
        rule: "10.0.0.0/8=crawler:web",
        address: "10.0.0.0",
        prefix: 8,
        family: "ipv4",
        token: "crawler",
        pool: "web",
    });
    assert.deepEqual(parseAllowRule("127.0.0.1=dev"), {
        rule: "127.0.0.1=dev",
        address: "127.0.0.1",
        prefix: 32,
        family: "ipv4",
        token: "dev",
    });
    assert.equal(parseAllowRule("::1=dev").prefix, 128);
    assert.equal(parseAllowRule("2001:db8::/32=dev").family, "ipv6");
    // A v4-mapped CIDR is the IPv4 range it maps.
    const mapped = parseAllowRule("::ffff:10.1.0.0/112=dev");
    assert.deepEqual([mapped.address, mapped.prefix, mapped.family], ["10.1.0.0", 16, "ipv4"]);
});

test("a bad allow rule is refused, quoting the rule and the expected form", () => {
    const refused = (rule: string, why: RegExp) =>
        assert.throws(
            () => parseAllowRule(rule),
            (e: Error) => {
                assert.match(e.message, why);
                assert.ok(e.message.includes(JSON.stringify(rule)), e.message);
                assert.ok(e.message.includes("expected <cidr>=<token-name>[:<pool>]"), e.message);
                return true;
            },
        );
    refused("10.0.0.0/8", /no token name/);
    refused("10.0.0.0/8=", /token name is empty/);
    refused("10.0.0.300/8=dev", /not an IPv4 or IPv6 address/);
    refused("example.org=dev", /not an IPv4 or IPv6 address/);
    refused("10.0.0.0/33=dev", /prefix length that is not 0 to 32/);
    refused("2001:db8::/129=dev", /prefix length that is not 0 to 128/);
    refused("10.0.0.0/x=dev", /prefix length/);
    refused("::ffff:10.0.0.0/64=dev", /prefix length/);
    refused("0.0.0.0/0=dev", /admits every address/);
    refused("::/0=dev", /admits every address/);
    refused("10.0.0.0/8=dev:Web_1", /not a pool name/);
    refused("10.0.0.0/8=dev:web:x", /more than one ':'/);
});

test("sources match by family, IPv4-mapped IPv6 as IPv4; the first rule that covers wins; none unless named", () => {
    const list = new SourceAllowList(
        ["127.0.0.1/32=local", "10.0.0.0/8=office:web", "2001:db8::/32=v6", "::1=v6-loop"].map(parseAllowRule),
    );
    assert.equal(list.match("127.0.0.1")?.token, "local");
    assert.equal(list.match("::ffff:127.0.0.1")?.token, "local");
    assert.equal(list.match("::FFFF:10.20.30.40")?.token, "office");
    assert.equal(list.match("10.255.255.255")?.pool, "web");
    assert.equal(list.match("2001:db8:1::7")?.token, "v6");
    assert.equal(list.match("::1")?.token, "v6-loop");
    for (const none of ["127.0.0.2", "11.0.0.1", "2001:db9::1", "::ffff:11.0.0.1", "", undefined, "not-an-ip"])
        assert.equal(list.match(none), undefined, String(none));
    // Loopback is not special: an empty list allows nothing.
    const empty = new SourceAllowList([]);
    for (const a of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) assert.equal(empty.match(a), undefined, a);
    // A v4-mapped rule matches the plain IPv4 address; an IPv6 rule never matches an IPv4 source.
    assert.equal(new SourceAllowList([parseAllowRule("::ffff:127.0.0.1=m")]).match("127.0.0.1")?.token, "m");
    assert.equal(new SourceAllowList([parseAllowRule("::/1=v6")]).match("127.0.0.1"), undefined);
    const first = new SourceAllowList(["10.0.0.0/8=wide", "10.1.0.0/16=narrow"].map(parseAllowRule));
    assert.equal(first.match("10.1.2.3")?.token, "wide");
});

test("an allow rule's token must exist and may lease", () => {
    const tokens = [token("crawler", ["lease"]), token("ops", ["admin"]), token("reader", ["discover"])];
    const rules = ["127.0.0.1=crawler", "::1=ops", "10.0.0.0/8=nobody", "10.0.0.1=reader"].map(parseAllowRule);
    const problems = allowProblems(rules, tokens);
    assert.equal(problems.length, 2, JSON.stringify(problems));
    assert.equal(problems[0].path, "--gateway-allow");
    assert.match(problems[0].rule, /"10\.0\.0\.0\/8=nobody" names token "nobody", which is not in the tokens file/);
    assert.match(problems[0].rule, /known: crawler, ops, reader/);
    assert.match(problems[1].rule, /"reader", which lacks the `lease` scope/);
});

test("a sticky range: ports, an optional pool, at most MAX_STICKY_PORTS", () => {
    assert.deepEqual(parseStickyRange("20000-20009:web"), {
        rule: "20000-20009:web",
        from: 20000,
        to: 20009,
        pool: "web",
    });
    assert.deepEqual(parseStickyRange("20000"), { rule: "20000", from: 20000, to: 20000 });
    assert.equal(parseStickyRange(`20000-${20000 + MAX_STICKY_PORTS - 1}`).to, 20999);
    const refused = (rule: string, why: RegExp) => assert.throws(() => parseStickyRange(rule), why);
    refused(`20000-${20000 + MAX_STICKY_PORTS}`, /1001 ports is more than 1000/);
    refused("20010-20000", /ends \(20000\) before it starts \(20010\)/);
    refused("0-10", /from 1 to 65535/);
    refused("65530-65536", /from 1 to 65535/);
    refused("a-b", /not a port range/);
    refused("20000-20001:Web", /not a pool name/);
    const ports = stickyPorts([parseStickyRange("20000-20001:web"), parseStickyRange("21000")]);
    assert.deepEqual(
        [...ports],
        [
            [20000, { session: "port-20000", pool: "web" }],
            [20001, { session: "port-20001", pool: "web" }],
            [21000, { session: "port-21000" }],
        ],
    );
});

test("sticky ranges may not overlap one another or another flag's port", () => {
    const r = (...rules: string[]) => rules.map(parseStickyRange);
    assert.equal(
        stickyClash(r("20000-20009", "20010-20019"), { "--gateway-port": 8888, "--socks-port": 0 }),
        undefined,
    );
    assert.match(stickyClash(r("20000-20009", "20005-20019"), {})!, /"20005-20019" overlaps "20000-20009"/);
    assert.match(
        stickyClash(r("8880-8889"), { "--gateway-port": 8888 })!,
        /"8880-8889" includes --gateway-port's port 8888/,
    );
    // 0 is "off" (or "any free port"), never a clash.
    assert.equal(stickyClash(r("1-10"), { "--socks-port": 0 }), undefined);
});

test("the CLI's door flags: errors name the flag and the rule; pools must be the stack's", () => {
    const taken = { "--port": 8080, "--gateway-port": 8888 };
    const doors = doorFlags(["127.0.0.1/32=dev:web"], ["20000-20001:web"], ["web"], taken);
    assert.equal(doors.allow[0].token, "dev");
    assert.equal(doors.stickyPorts[0].to, 20001);
    const usage = (fn: () => unknown, why: RegExp) =>
        assert.throws(fn, (e: Error) => e.constructor.name === "UsageError" && why.test(e.message));
    usage(
        () => doorFlags(["127.0.0.1/40=dev"], [], ["web"], taken),
        /^--gateway-allow "127\.0\.0\.1\/40=dev": .*prefix/,
    );
    usage(
        () => doorFlags(["127.0.0.1=dev:shop"], [], ["web"], taken),
        /^--gateway-allow .*no pool "shop" \(pools: web\)/,
    );
    usage(() => doorFlags([], ["20000-21000"], ["web"], taken), /^--gateway-sticky-ports "20000-21000": 1001 ports/);
    usage(
        () => doorFlags([], ["8000-8100"], ["web"], taken),
        /^--gateway-sticky-ports "8000-8100" includes --port's port 8080/,
    );
    usage(() => doorFlags([], ["1-5", "5-9"], ["web"], taken), /overlaps/);
    usage(
        () => doorFlags([], ["1-5:shop"], ["web"], taken),
        /^--gateway-sticky-ports "1-5:shop": the stack has no pool/,
    );
    // The environment's comma-separated list applies only when the flag is not given.
    assert.deepEqual(listFlag(undefined, " 127.0.0.1=a , ::1=b,"), ["127.0.0.1=a", "::1=b"]);
    assert.deepEqual(listFlag(["10.0.0.1=c"], "127.0.0.1=a"), ["10.0.0.1=c"]);
    assert.deepEqual(listFlag(undefined, undefined), []);
});
