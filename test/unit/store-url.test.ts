/** `--store` parsing (the rule, exact messages) and URL passwords masked in log lines at any depth. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { createLogger } from "../../src/log/logger";
import { maskUrlPasswords } from "../../src/log/redact";
import { parseStoreSpec, redactStoreUrl } from "../../src/service/store";

test("memory is the default; redis:// and rediss:// URLs parse with their db", () => {
    assert.deepEqual(parseStoreSpec(undefined), { kind: "memory" });
    assert.deepEqual(parseStoreSpec(""), { kind: "memory" });
    assert.deepEqual(parseStoreSpec("memory"), { kind: "memory" });
    assert.deepEqual(parseStoreSpec("redis://127.0.0.1:6379"), {
        kind: "redis",
        url: "redis://127.0.0.1:6379",
        tls: false,
        db: 0,
    });
    assert.deepEqual(parseStoreSpec("rediss://u:p@cache.internal:6380/3"), {
        kind: "redis",
        url: "rediss://u:p@cache.internal:6380/3",
        tls: true,
        db: 3,
    });
});

test("a refusal names the flag, what is wrong and the rule, with the password masked", () => {
    assert.throws(() => parseStoreSpec("redis://:s3cret@h:1/1?x=1", "EGRESS_STORE"), {
        message:
            "EGRESS_STORE redis://:***@h:1/1?x=1 takes no ?query or #fragment: it must be `memory`, or redis://[user:pass@]host:port[/db] (rediss:// for TLS; db 0 to 15)",
    });
    assert.equal(redactStoreUrl("redis://u:s3cret@h:1"), "redis://u:***@h:1");
    assert.equal(redactStoreUrl("not a url u:s3cret@h"), "not a url u:***@h");
});

test("a URL's password is masked in log fields at any depth, in messages and in errors", () => {
    assert.equal(maskUrlPasswords("plain text"), "plain text");
    assert.equal(
        maskUrlPasswords("to redis://u:s3cret@h:1/0 and http://a:b@c"),
        "to redis://u:[redacted]@h:1/0 and http://a:[redacted]@c",
    );
    let out = "";
    const log = createLogger({
        destination: new Writable({
            write(c, _e, cb) {
                out += c;
                cb();
            },
        }),
    });
    log.info({ deep: { deeper: [{ where: "redis://:s3cret@127.0.0.1:1" }] } }, "connecting to rediss://x:s3cret@h:2");
    log.warn({ err: new Error("failed: redis://:s3cret@h:3") }, "oops");
    assert.ok(!out.includes("s3cret"), out);
    // The field, the message, the error's message and its stack.
    assert.equal((out.match(/\[redacted\]@/g) ?? []).length, 4, out);
});
