import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { loadStackConfig, parseEgressConfig, PACKAGE_ROOT_FOR_TESTS, problemLines } from "./config-fixtures";
import { ensureStackFile, seedFile } from "../../src/config";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-config-"));
const ok = (pools: unknown[], providers: object = { local: { type: "local" } }) => ({ providers, pools });

/** Parses and returns the problems' formatted lines, failing if the config was accepted. */
const problems = (raw: unknown): string[] => problemLines(raw, root);

test("a minimal local config gets its defaults", () => {
    const cfg = parseEgressConfig(ok([{ name: "dev", provider: "local", replicas: 3 }]), root);
    assert.deepEqual(cfg.pools[0], {
        name: "dev",
        provider: "local",
        replicas: 3,
        maxReplicas: 100,
        port: 3128,
        placement: {},
        members: [],
        cooldownSeconds: 0,
        sessionTtlSeconds: 1800,
        replaceUnhealthyAfterSeconds: 300,
        maxSurge: 1,
        maxUnavailable: 0,
        ipMemorySeconds: 3600,
        drainSeconds: 60,
    });
});

test("the shipped dev stack (its seed, as the first command copies it) validates", () => {
    const project = path.join(root, "seeded");
    fs.mkdirSync(path.join(project, "stacks", "seeds"), { recursive: true });
    fs.copyFileSync(seedFile(PACKAGE_ROOT_FOR_TESTS, "dev"), seedFile(project, "dev"));
    assert.ok(ensureStackFile(project, "dev"));
    const cfg = loadStackConfig(project, "dev");
    assert.equal(cfg.pools[0].name, "dev");
    assert.equal(cfg.providers.local.type, "local");
});

test("names must be DNS-1123 labels, and the message says so with the path and value", () => {
    assert.deepEqual(problems(ok([{ name: "Web_1", provider: "local", replicas: 1 }])), [
        `egress:pools[0].name: must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters (got "Web_1")`,
    ]);
});

test("unknown keys are rejected by name", () => {
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 1, replica: 2 }])), [
        "egress:pools[0]: unknown key(s) `replica`",
    ]);
});

test("replica counts: negative, fractional, above maxReplicas", () => {
    assert.match(
        problems(ok([{ name: "a", provider: "local", replicas: -1 }]))[0],
        /^egress:pools\[0\]\.replicas: must be 0 or more \(got -1\)$/,
    );
    assert.match(
        problems(ok([{ name: "a", provider: "local", replicas: 1.5 }]))[0],
        /^egress:pools\[0\]\.replicas: .*(whole number|integer).*\(got 1\.5\)$/,
    );
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 9, maxReplicas: 4 }])), [
        "egress:pools[0].replicas: must not exceed maxReplicas (4) (got 9)",
    ]);
});

test("drainSeconds: bad values name the path and the rule", () => {
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 1, drainSeconds: -1 }])), [
        "egress:pools[0].drainSeconds: must be 0 (no drain) or more (got -1)",
    ]);
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 1, drainSeconds: 7200 }])), [
        "egress:pools[0].drainSeconds: must be at most 3600 (an hour, the longest lease) (got 7200)",
    ]);
    assert.match(
        problems(ok([{ name: "a", provider: "local", replicas: 1, drainSeconds: "60" }]))[0],
        /^egress:pools\[0\]\.drainSeconds: .*number/,
    );
    assert.equal(
        parseEgressConfig(ok([{ name: "a", provider: "local", replicas: 1, drainSeconds: 0 }]), root).pools[0]
            .drainSeconds,
        0,
    );
});

test("sessionTtlSeconds: bad values name the path and the rule", () => {
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 1, sessionTtlSeconds: 0 }])), [
        "egress:pools[0].sessionTtlSeconds: must be 1 or more (got 0)",
    ]);
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 1, sessionTtlSeconds: 90000 }])), [
        "egress:pools[0].sessionTtlSeconds: must be at most 86400 (a day) (got 90000)",
    ]);
    assert.deepEqual(problems(ok([{ name: "a", provider: "local", replicas: 1, sessionTtlSeconds: 2.5 }])), [
        "egress:pools[0].sessionTtlSeconds: must be a whole number (got 2.5)",
    ]);
    assert.equal(
        parseEgressConfig(ok([{ name: "a", provider: "local", replicas: 1, sessionTtlSeconds: 60 }]), root).pools[0]
            .sessionTtlSeconds,
        60,
    );
});

test("provider type must be known", () => {
    const lines = problems(ok([], { x: { type: "aws" } }));
    assert.equal(lines.length, 1);
    assert.match(lines[0], /^egress:providers\.x\.type: .*(local|kvm).*/);
});

test("a pool must name an existing provider entry", () => {
    assert.deepEqual(problems(ok([{ name: "a", provider: "nope", replicas: 1 }])), [
        `egress:pools[0].provider: must name an entry of egress:providers (known: local) (got "nope")`,
    ]);
});

test("duplicate member overrides are named", () => {
    assert.deepEqual(
        problems(ok([{ name: "a", provider: "local", replicas: 1, members: [{ index: 0 }, { index: 0 }] }])),
        ["egress:pools[0].members[1].index: duplicates another override for member 0 (got 0)"],
    );
});

test("duplicate pool names are named", () => {
    const lines = problems(
        ok([
            { name: "a", provider: "local", replicas: 1 },
            { name: "a", provider: "local", replicas: 1 },
        ]),
    );
    assert.deepEqual(lines, [`egress:pools[1].name: duplicates another pool's name (got "a")`]);
});

test("a member whose cloud-init sets squid http_port must declare the same port", () => {
    const squid = (p: number) =>
        `#cloud-config\nwrite_files:\n  - path: /etc/squid/conf.d/egress.conf\n    content: |\n      http_port ${p}\n`;
    fs.writeFileSync(path.join(root, "shared.yaml"), squid(3128));
    const pool = (memberPort: number) => ({
        name: "home",
        provider: "local",
        replicas: 5,
        port: 3128,
        cloudInit: { file: "shared.yaml" },
        members: [{ index: 4, port: memberPort, cloudInit: { inline: squid(8080) } }],
    });
    assert.equal(parseEgressConfig(ok([pool(8080)]), root).pools[0].members[0].port, 8080);
    assert.deepEqual(problems(ok([pool(3128)])), [
        "egress:pools[0].members[0].port: must be 8080: member 4's cloud-init sets squid http_port 8080 (got 3128)",
    ]);
});

test("a missing cloud-init file is named with its config path", () => {
    const lines = problems(ok([{ name: "a", provider: "local", replicas: 1, cloudInit: { file: "missing.yaml" } }]));
    assert.equal(lines.length, 1);
    assert.match(
        lines[0],
        /^egress:pools\[0\]\.cloudInit\.file: cannot read cloud-init file: ENOENT.*\(got "missing.yaml"\)$/,
    );
});

test("an unknown egress:* key in a stack file is an error", () => {
    fs.mkdirSync(path.join(root, "stacks"), { recursive: true });
    fs.writeFileSync(
        path.join(root, "stacks", "Pulumi.t.yaml"),
        "config:\n  egress:pool: []\n  egress:providers: {}\n",
    );
    assert.throws(
        () => loadStackConfig(root, "t"),
        /egress:pool: unknown key; expected one of egress:providers, egress:pools/,
    );
});

test("secrets never appear in error messages", () => {
    const lines = problems(
        ok([], { k: { type: "kvm", ssh: { user: 1, privateKey: { secure: "c2VjcmV0" } }, hosts: [], images: {} } }),
    );
    assert.ok(lines.length > 0);
    assert.ok(
        lines.every((l) => !l.includes("c2VjcmV0")),
        lines.join("\n"),
    );
});

test("pool auth: username charset and password rules name the path, and the password is never quoted", () => {
    const pw = "short\npw";
    const msgs = problems(
        ok([{ name: "a", provider: "local", replicas: 1, auth: { username: "crawler:1@x", password: pw } }]),
    );
    assert.deepEqual(msgs, [
        `egress:pools[0].auth.username: must be 1-64 characters of letters, digits, '.', '_', '~' and '-' (safe in squid's passwd file and in a URL) (got "crawler:1@x")`,
        'egress:pools[0].auth.password: must be at least 12 characters (use a random one: `openssl rand -base64 24`) (got "[redacted]")',
        'egress:pools[0].auth.password: must not contain control characters (newlines, tabs) (got "[redacted]")',
    ]);
    assert.ok(!msgs.join("\n").includes("short"), "the password is never quoted");
    assert.deepEqual(
        problems(ok([{ name: "a", provider: "local", replicas: 1, auth: { username: "crawler" } }])).map((m) =>
            m.split(":").slice(0, 2).join(":"),
        ),
        ["egress:pools[0].auth.password"],
    );
    const cfg = parseEgressConfig(
        ok([
            {
                name: "a",
                provider: "local",
                replicas: 1,
                auth: { username: "crawler.01", password: "a-long-random-password" },
            },
        ]),
        root,
    );
    assert.deepEqual(cfg.pools[0].auth, { username: "crawler.01", password: "a-long-random-password" });
});

test("a value of the wrong type or a missing one names what to write, never zod's bare wording", () => {
    const lines = [
        ...problems(ok([{ name: "a", provider: "local", replicas: "three" }])),
        ...problems(ok([{ name: "a", provider: "local" }])),
        ...problems(ok([{ name: "a", provider: "local", replicas: 1, members: {} }])),
    ];
    for (const line of lines) assert.doesNotMatch(line, /Invalid input|received/, line);
    assert.ok(
        lines.includes('egress:pools[0].replicas: must be a number, not a string (got "three")'),
        lines.join("\n"),
    );
    assert.ok(lines.includes("egress:pools[0].replicas: is required (a number)"), lines.join("\n"));
    assert.ok(
        lines.some((l) => l.startsWith("egress:pools[0].members: must be a list, not a mapping")),
        lines.join("\n"),
    );
});
