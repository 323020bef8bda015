import { test } from "node:test";
import assert from "node:assert/strict";
import { allowedSourceRangesSchema, isOpenRange, parseCidr } from "../../src/model/cidr";

test("CIDR parsing rejects impossible addresses and prefixes", () => {
    assert.deepEqual(parseCidr("203.0.113.7/32"), { family: 4, prefix: 32 });
    assert.deepEqual(parseCidr("2001:db8::/48"), { family: 6, prefix: 48 });
    for (const bad of ["999.1.1.1/24", "10.0.0.0/33", "10.0.0.0", "2001:db8::/129", "example.com/24", "10.0.0.0/8 "])
        assert.equal(parseCidr(bad), undefined, bad);
});

test("the open internet is refused in every spelling", () => {
    for (const open of ["0.0.0.0/0", "::/0", "0:0:0:0:0:0:0:0/0", "::0/0", "10.1.2.3/0"])
        assert.equal(isOpenRange(open), true, open);
    const r = allowedSourceRangesSchema().safeParse(["203.0.113.0/24", "::0/0"]);
    assert.equal(r.success, false);
    assert.match(r.error!.issues[0].message, /must not contain 0.0.0.0\/0 or ::\/0/);
});

test("halves of the internet (and other very broad ranges) are refused too", () => {
    const r = allowedSourceRangesSchema().safeParse(["0.0.0.0/1", "128.0.0.0/1"]);
    assert.equal(r.success, false);
    assert.match(r.error!.issues.map((i) => i.message).join(), /broader than \/8 \(IPv4\) or \/16 \(IPv6\)/);
    assert.equal(
        allowedSourceRangesSchema().safeParse(["10.0.0.0/8", "2001:db8::/32", "203.0.113.7/32"]).success,
        true,
    );
});
