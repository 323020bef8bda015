/** `--store` parsing (the rule, exact messages) and URL passwords masked in log lines at any depth. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { createLogger } from "../../src/log/logger";
import { maskUrlPasswords } from "../../src/log/redact";
import { parseStoreSpec, redactStoreUrl, STORE_RULE } from "../../src/service/store";
import { sentinelOptions } from "../../src/state/redis/open-redis";
import { protectedEndpoints } from "../../src/service/start/protected-endpoints";

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
            "EGRESS_STORE redis://:***@h:1/1?x=1 takes no ?query or #fragment: it must be `memory`, redis://[user:pass@]host:port[/db] (rediss:// for TLS; db 0 to 15), or redis+sentinel://[user:pass@]host:port[,host:port…]/<master-name>[/db] (rediss+sentinel:// for TLS)",
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

test("redis+sentinel:// URLs parse into their sentinels, master name, db and credentials", () => {
    const url = "redis+sentinel://app:p%40ss@10.0.0.1:26379,[::1]:26380,s3.internal:26381/egress-main/2";
    assert.deepEqual(parseStoreSpec(url), {
        kind: "redis",
        url,
        tls: false,
        db: 2,
        sentinel: {
            tls: false,
            username: "app",
            password: "p@ss",
            name: "egress-main",
            db: 2,
            sentinels: [
                { host: "10.0.0.1", port: 26379 },
                { host: "::1", port: 26380 },
                { host: "s3.internal", port: 26381 },
            ],
        },
    });
    const tls = parseStoreSpec("rediss+sentinel://:pw@h:1/m");
    assert.equal(tls.kind === "redis" && tls.tls && tls.db === 0 && tls.sentinel?.password === "pw", true);
});

test("a broken sentinel URL names each broken part, with the password masked", () => {
    const refusal = (raw: string) => {
        try {
            parseStoreSpec(raw, "--store");
        } catch (e) {
            return (e as Error).message.replace(`: it must be ${STORE_RULE}`, "");
        }
        assert.fail(`${raw} was accepted`);
    };
    assert.equal(
        refusal("redis+sentinel://:s3cret@h1:1,h2/m"),
        '--store redis+sentinel://:***@h1:1,h2/m sentinel "h2" is not host:port',
    );
    assert.equal(
        refusal("redis+sentinel://h1:1"),
        "--store redis+sentinel://h1:1 has no master name (…/<master-name>[/db] after the sentinels)",
    );
    assert.equal(refusal("redis+sentinel:///m"), "--store redis+sentinel:///m has no sentinel host:port");
    assert.equal(
        refusal("redis+sentinel://u:s3cret@h:0,,h:2/m/16?x"),
        '--store redis+sentinel://u:***@h:0,,h:2/m/16?x takes no ?query or #fragment, sentinel "h:0" has port 0, not 1 to 65535, has an empty sentinel between commas, database "16" is not a number from 0 to 15',
    );
    assert.equal(
        refusal("redis+sentinel://h:1/m/0/x"),
        "--store redis+sentinel://h:1/m/0/x has more than /<master-name>/<db> in its path",
    );
    assert.equal(
        refusal("redis+sentinel://h:1/m y"),
        '--store redis+sentinel://h:1/m y master name "m y" is not letters, digits, . _ -',
    );
    assert.match(
        refusal("sentinel://h:1/m"),
        /scheme sentinel:\/\/ is not redis:\/\/, rediss:\/\/ or redis\+sentinel:\/\//,
    );
    // The whole URL, however long, with everything up to the last @ masked.
    const long =
        "redis+sentinel://u:a/b@c@sentinel-one.internal:26379,sentinel-two.internal:26379,sentinel-three.internal:26379/m";
    assert.equal(redactStoreUrl(long), long.replace("a/b@c", "***"));
    assert.equal(
        maskUrlPasswords("at redis+sentinel://u:s3cret@h1:1,h2:2/m"),
        "at redis+sentinel://u:[redacted]@h1:1,h2:2/m",
    );
});

test("a sentinel URL becomes ioredis' Sentinel options, the caller's policy applied to the sentinels too", () => {
    const o = sentinelOptions("rediss+sentinel://u:pw@h1:1,h2:2/main/3", {
        commandTimeout: 1500,
        retryStrategy: () => null,
    });
    assert.deepEqual(o.sentinels, [
        { host: "h1", port: 1 },
        { host: "h2", port: 2 },
    ]);
    assert.equal(o.name, "main");
    assert.equal(o.role, "master");
    assert.equal(o.db, 3);
    assert.equal(o.password, "pw");
    assert.equal(o.sentinelPassword, "pw");
    assert.equal(o.sentinelCommandTimeout, 1500);
    assert.equal(o.sentinelRetryStrategy?.(1), null);
    assert.equal(o.enableTLSForSentinelMode, true);
});

test("the gateway refuses the sentinels of a sentinel store, as it refuses a plain store's address", () => {
    const backend = { kind: "file" as const, url: "file:///x", shown: "file:///x" };
    const api = { host: "127.0.0.1", port: 8080 };
    assert.deepEqual(
        protectedEndpoints(parseStoreSpec("redis+sentinel://:pw@10.0.0.1:26379,[::1]:26380/m"), backend, api),
        [
            { what: "this service's API", ...api },
            { what: "the lease store's sentinel", host: "10.0.0.1", port: 26379 },
            { what: "the lease store's sentinel", host: "::1", port: 26380 },
        ],
    );
    assert.deepEqual(protectedEndpoints(parseStoreSpec("redis://:pw@10.0.0.5:6379"), backend, api)[1], {
        what: "the lease store",
        host: "10.0.0.5",
        port: 6379,
    });
});
