/**
 * `egress serve` refuses bad flags, intervals and heal settings at start: exit 2, naming the flag or
 * field, nothing started, and said as one JSON line on stderr (every line serve writes is JSON).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

const cli = path.join(PACKAGE_ROOT, "dist", "src", "cli.js");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-serve-flags-"));
fs.mkdirSync(path.join(dir, "stacks"));
fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: egress\nruntime: nodejs\nstackConfigDir: stacks\n");
fs.writeFileSync(
    path.join(dir, "stacks", "Pulumi.t.yaml"),
    "config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: local, replicas: 1 }\n",
);

/** Each line of `text` parsed; a line that is not a JSON object fails the test. */
function jsonLines(text: string, stream: string): Record<string, any>[] {
    return text
        .split("\n")
        .filter((l, i, all) => l !== "" || i < all.length - 1)
        .map((l) => {
            let o: unknown;
            try {
                o = JSON.parse(l);
            } catch {
                /* judged below */
            }
            assert.ok(
                o && typeof o === "object" && !Array.isArray(o),
                `serve wrote a line on ${stream} that is not a JSON object: ${JSON.stringify(l)}`,
            );
            return o as Record<string, any>;
        });
}

/**
 * Runs serve, which must fail before listening (a service that started would never exit: the spawn
 * times out). Returns its exit code and the one fatal line it must write to stderr; stdout stays empty.
 */
function serve(stack: string, ...args: string[]) {
    const r = cp.spawnSync(process.execPath, [cli, "--cwd", dir, "--stack", stack, "serve", "--port", "0", ...args], {
        encoding: "utf8",
        timeout: 20_000,
    });
    const out = jsonLines(r.stdout, "stdout");
    const err = jsonLines(r.stderr, "stderr");
    assert.deepEqual(out, [], "nothing on stdout");
    assert.equal(err.length, 1, `one line on stderr: ${r.stderr}`);
    const [line] = err;
    assert.equal(line.level, 60, "fatal");
    assert.equal(line.exitCode, r.status, "the line says the exit code");
    return { code: r.status, stderr: String(line.msg), line };
}

for (const [flag, value, message] of [
    [
        "--reconcile-interval",
        "-1",
        `--reconcile-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "-1")`,
    ],
    [
        "--reconcile-interval",
        "abc",
        `--reconcile-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "abc")`,
    ],
    [
        "--reconcile-interval",
        "1e9",
        `--reconcile-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "1e9")`,
    ],
    [
        "--reconcile-interval",
        "Infinity",
        `--reconcile-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "Infinity")`,
    ],
    [
        "--reconcile-interval",
        "0.5",
        `--reconcile-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "0.5")`,
    ],
    [
        "--provider-check-interval",
        "-1",
        `--provider-check-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "-1")`,
    ],
    [
        "--provider-check-interval",
        "soon",
        `--provider-check-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "soon")`,
    ],
    [
        "--provider-check-interval",
        "1e9",
        `--provider-check-interval must be 0 (off) or a number of seconds from 1 to 86400 (got "1e9")`,
    ],
    ["--provider-check-timeout", "0", `--provider-check-timeout must be a number of seconds from 1 to 600 (got "0")`],
    ["--provider-check-timeout", "-3", `--provider-check-timeout must be a number of seconds from 1 to 600 (got "-3")`],
    [
        "--provider-check-timeout",
        "3601",
        `--provider-check-timeout must be a number of seconds from 1 to 600 (got "3601")`,
    ],
    ["--probe-interval", "0", `--probe-interval must be a number of seconds from 0.1 to 3600 (got "0")`],
    ["--probe-interval", "-5", `--probe-interval must be a number of seconds from 0.1 to 3600 (got "-5")`],
    ["--probe-interval", "86400", `--probe-interval must be a number of seconds from 0.1 to 3600 (got "86400")`],
    ["--gateway-port", "abc", `--gateway-port must be a port number, or 0 for no gateway (got "abc")`],
    ["--gateway-port", "70000", `--gateway-port must be a port number, or 0 for no gateway (got "70000")`],
    ["--socks-port", "1080x", `--socks-port must be a port number, or 0 for no SOCKS5 (got "1080x")`],
    ["--gateway-tls-port", "x", `--gateway-tls-port must be a port number, or 0 for no TLS port (got "x")`],
    ["--socks-port", "-1", `--socks-port must be a port number, or 0 for no SOCKS5 (got "-1")`],
    [
        "--gateway-block-header",
        "bad header",
        `--gateway-block-header must be a header name, optionally =text (got "bad header")`,
    ],
    ["--gateway-block-header", "server=", `--gateway-block-header "server=": the text after = is empty`],
    ["--target-cooldown", "-1", `--target-cooldown must be a number of seconds from 0 to 3600 (got "-1")`],
    [
        "--gateway-allow",
        "10.0.0.0/33=dev",
        `--gateway-allow "10.0.0.0/33=dev": "10.0.0.0/33" has a prefix length that is not 0 to 32`,
    ],
    ["--gateway-allow", "localhost=dev", `--gateway-allow "localhost=dev": "localhost" is not an IPv4 or IPv6`],
    ["--gateway-allow", "127.0.0.1=dev:shop", `--gateway-allow "127.0.0.1=dev:shop": the stack has no pool "shop"`],
    ["--gateway-sticky-ports", "20000-21000", `--gateway-sticky-ports "20000-21000": 1001 ports is more than 1000`],
    ["--gateway-sticky-ports", "8880-8890", `--gateway-sticky-ports "8880-8890" includes --gateway-port's port 8888`],
    [
        "--store",
        "http://u:hunter2@h:1",
        "--store http://u:***@h:1/ scheme http:// is not redis://, rediss:// or redis+sentinel://: it must be `memory`, redis://[user:pass@]host:port[/db]",
    ],
    ["--store", "redis://:hunter2@h", "--store redis://:***@h has no port: it must be"],
    ["--store", "redis://h:6379/16", `--store redis://h:6379/16 database "16" is not a number from 0 to 15`],
    ["--store", "memroy", "--store memroy is not a URL: it must be `memory`, redis://"],
    [
        "--store",
        "redis+sentinel://:hunter2@127.0.0.1:26379,127.0.0.1/main",
        '--store redis+sentinel://:***@127.0.0.1:26379,127.0.0.1/main sentinel "127.0.0.1" is not host:port: it must be',
    ],
] as const) {
    test(`serve ${flag} ${value} → exit 2 naming the flag`, () => {
        const r = serve("t", flag, value);
        assert.equal(r.code, 2, r.stderr);
        assert.ok(r.stderr.includes(message), r.stderr);
        assert.ok(!fs.existsSync(path.join(dir, ".egress", "run")), "nothing started");
    });
}

test("a bad store URL never shows its password, from --store or EGRESS_STORE (which the message names)", () => {
    for (const [args, env, names] of [
        [["--store", "rediss://user:hunter2@h:1/x"], {}, "--store"],
        [[], { EGRESS_STORE: "redis://user:hunter2@h" }, "EGRESS_STORE"],
    ] as const) {
        const r = cp.spawnSync(process.execPath, [cli, "--cwd", dir, "--stack", "t", "serve", "--port", "0", ...args], {
            encoding: "utf8",
            timeout: 20_000,
            env: { ...process.env, ...env },
        });
        assert.equal(r.status, 2, r.stderr);
        assert.ok(r.stderr.includes(`${names} `), `names ${names}: ${r.stderr}`);
        assert.ok(
            !r.stdout.includes("hunter2") && !r.stderr.includes("hunter2"),
            `the password stays out: ${r.stderr}`,
        );
    }
});

for (const [field, value, message] of [
    ["replaceUnhealthyAfterSeconds", "-1", "egress:pools[0].replaceUnhealthyAfterSeconds: must be 0 (never) or more"],
    ["replaceUnhealthyAfterSeconds", "1.5", "egress:pools[0].replaceUnhealthyAfterSeconds: must be a whole number"],
    [
        "replaceUnhealthyAfterSeconds",
        "99999999",
        "egress:pools[0].replaceUnhealthyAfterSeconds: must be at most 604800 (a week)",
    ],
    ["maxSurge", "0", "egress:pools[0].maxSurge: must be 1 or more"],
] as const) {
    test(`pool ${field}: ${value} → exit 2 naming the field`, () => {
        const stack = `bad${field.length}${value.replace(/\W/g, "")}`;
        fs.writeFileSync(
            path.join(dir, "stacks", `Pulumi.${stack}.yaml`),
            `config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: local, replicas: 1, ${field}: ${value} }\n`,
        );
        const r = serve(stack);
        assert.equal(r.code, 2, r.stderr);
        assert.ok(r.stderr.includes(message), r.stderr);
    });
}

test("commander's own errors (an unknown option, a missing value) are JSON lines too, exit 2", () => {
    const unknown = serve("t", "--no-such-flag");
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown option '--no-such-flag'/);
    assert.match(unknown.line.hint, /egress serve --help/);
    const missing = serve("t", "--probe-interval");
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /option '--probe-interval <seconds>' argument missing/);
});

test("a config error is one JSON line whose err carries the problems, exit 2", () => {
    fs.writeFileSync(
        path.join(dir, "stacks", "Pulumi.badpool.yaml"),
        "config:\n  egress:providers:\n    local: { type: local }\n  egress:pools:\n    - { name: web, provider: nope, replicas: 1 }\n",
    );
    const r = serve("badpool");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^invalid egress configuration/);
    assert.equal(r.line.err.type, "ConfigError");
    assert.ok(
        Array.isArray(r.line.err.problems) &&
            r.line.err.problems.some((p: { path: string }) => p.path.startsWith("egress:pools[0]")),
        JSON.stringify(r.line.err),
    );
});
