import { test } from "node:test";
import * as assert from "node:assert/strict";
import { apr1, derivedSalt, squidPasswdFile } from "../../components/shared/squid-passwd";

// Expected values from `openssl passwd -apr1 -salt abcdefgh <password>` (OpenSSL 3).
test("apr1 matches openssl passwd -apr1 (short, long, multi-byte, one-character passwords)", () => {
    assert.equal(apr1("password", "abcdefgh"), "$apr1$abcdefgh$FBwExRW4dCc8aL.OvjpIE1");
    assert.equal(
        apr1("p@ss:w0rd with spaces and a long tail exceeding sixteen", "abcdefgh"),
        "$apr1$abcdefgh$VkY3d1kMIirD6q1nDv0K/1",
    );
    assert.equal(apr1("ü", "abcdefgh"), "$apr1$abcdefgh$JNY9bj4hb5VHXHQxpSV.41");
    assert.equal(apr1("x", "abcdefgh"), "$apr1$abcdefgh$82JubPF2dQkt1tVfvLnXS.");
});

test("apr1 refuses a salt crypt cannot carry", () => {
    assert.throws(() => apr1("pw", "bad$salt"), /salt must be 1-8 characters/);
    assert.throws(() => apr1("pw", ""), /salt must be 1-8 characters/);
});

test("the salt is stable per password and context, and differs across pools", () => {
    const a = derivedSalt("correct horse battery", "dev/web");
    assert.match(a, /^[./0-9A-Za-z]{8}$/);
    assert.equal(derivedSalt("correct horse battery", "dev/web"), a);
    assert.notEqual(derivedSalt("correct horse battery", "dev/api"), a);
});

test("the passwd file holds the user and a hash, never the clear password", () => {
    const file = squidPasswdFile({ username: "crawler", password: "correct horse battery" }, "dev/web");
    assert.match(file, /^crawler:\$apr1\$[./0-9A-Za-z]{8}\$[./0-9A-Za-z]{22}\n$/);
    assert.ok(!file.includes("correct horse battery"));
});
