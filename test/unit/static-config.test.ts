/** Config of kind `static`: URLs, credentials, schemes, duplicates, and the pool rules that follow from a fixed list. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError, parseEgressConfig } from "../../src/config";
import { problemLines } from "./config-fixtures";
import { checkReplicas } from "../../src/config/edit";
import { parseStaticProxy } from "../../components/static/config";
import { TEST_INSTALLATION } from "../helpers/installation";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-static-"));
const cfg = (
    proxies: unknown,
    pools: unknown[] = [{ name: "byo", provider: "byo", replicas: Array.isArray(proxies) ? proxies.length : 1 }],
) => ({ providers: { byo: { type: "static", proxies } }, pools });

const problems = (raw: unknown): string[] => problemLines(raw, root);

test("URLs, with credentials in the URL or as fields, parse into targets; replicas follow the list", () => {
    const c = parseEgressConfig(
        cfg([
            "http://127.0.0.1:3128",
            { url: "https://proxy.example", username: "u", password: "p w", zone: "dc-1" },
            "http://a%40b:s3cret@[::1]:8080",
        ]),
        root,
    );
    assert.equal(c.pools[0].replicas, 3);
    assert.equal(c.pools[0].replaceUnhealthyAfterSeconds, 0, "static members are never replaced");
    const [a, b, d] = (c.providers.byo as any).proxies.map(parseStaticProxy);
    assert.deepEqual(a, { scheme: "http", host: "127.0.0.1", port: 3128, zone: "static" });
    assert.deepEqual(b, {
        scheme: "https",
        host: "proxy.example",
        port: 443,
        zone: "dc-1",
        auth: { username: "u", password: "p w" },
    });
    assert.deepEqual(d, {
        scheme: "http",
        host: "::1",
        port: 8080,
        zone: "static",
        auth: { username: "a@b", password: "s3cret" },
    });
});

test("an unsupported scheme is a config error naming the path", () => {
    assert.deepEqual(problems(cfg(["http://127.0.0.1:1", "socks5://127.0.0.1:1080"])), [
        'egress:providers.byo.proxies[1]: has unsupported scheme `socks5`: use http:// or https:// (the proxy\'s own scheme) (got "socks5://127.0.0.1:1080")',
    ]);
    assert.match(
        problems(cfg([{ url: "ftp://127.0.0.1:21" }]))[0],
        /^egress:providers\.byo\.proxies\[0\]\.url: has unsupported scheme `ftp`/,
    );
    assert.match(
        problems(cfg(["not a url"]))[0],
        /^egress:providers\.byo\.proxies\[0\]: must be a URL such as http:\/\/proxy\.example:3128/,
    );
    assert.match(problems(cfg(["http://127.0.0.1:3128/path"]))[0], /proxies\[0\]: must be scheme:\/\/host:port only/);
});

test("duplicate proxies are refused (same scheme, host and port, whatever the credentials)", () => {
    assert.deepEqual(
        problems(cfg(["http://127.0.0.1:3128", "http://u:p@127.0.0.1:3128", "https://127.0.0.1:3128"])).map((l) =>
            l.replace(/ \(got .*\)$/, ""),
        ),
        ["egress:providers.byo.proxies[1]: duplicates proxies[0] (http://127.0.0.1:3128): list each proxy once"],
    );
    assert.match(
        problems(cfg(["http://PROXY.example:80", "http://proxy.example"]))[0],
        /proxies\[1\]: duplicates proxies\[0\]/,
    );
});

test("credentials: in the URL or as fields, not both; a password never shows in errors", () => {
    const lines = problems(cfg([{ url: "http://u:hunter2@127.0.0.1:1", username: "v", password: "hunter3" }]));
    assert.match(lines[0], /proxies\[0\]\.url: has credentials in the URL and in `username`\/`password`: use one/);
    assert.ok(!lines.join("\n").includes("hunter3"), lines.join("\n"));
    assert.match(
        problems(cfg([{ url: "http://127.0.0.1:1", username: "u" }]))[0],
        /needs both a username and a password, or neither/,
    );
    assert.match(problems(cfg([]))[0], /^egress:providers\.byo\.proxies: must list at least one proxy/);
});

test("an encrypted URL (straight from the stack file) is counted, and validated once decrypted", () => {
    const c = parseEgressConfig(cfg([{ secure: "v1:abc" }, { url: { secure: "v1:def" } }]), root);
    assert.equal(c.pools[0].replicas, 2);
});

test("a pool on a static entry: replicas must match the list, no overrides, one pool per entry", () => {
    assert.deepEqual(
        problems(cfg(["http://127.0.0.1:1", "http://127.0.0.1:2"], [{ name: "byo", provider: "byo", replicas: 3 }])),
        [
            "egress:pools[0].replicas: must be 2: the members of a `static` provider follow its entry (byo), not a count (got 3)",
        ],
    );
    assert.deepEqual(
        problems(
            cfg(
                ["http://127.0.0.1:1"],
                [
                    {
                        name: "byo",
                        provider: "byo",
                        replicas: 1,
                        placement: { zone: "a" },
                        members: [{ index: 0, port: 1 }],
                    },
                ],
            ),
        ).map((l) => l.replace(/ \(got .*\)$/, "")),
        [
            "egress:pools[0].placement: is not used by static providers (members are the listed proxies)",
            "egress:pools[0].members: is not used by static providers (members are the listed proxies)",
        ],
    );
    assert.deepEqual(
        problems(
            cfg(
                ["http://127.0.0.1:1"],
                [
                    { name: "a", provider: "byo", replicas: 1 },
                    { name: "b", provider: "byo", replicas: 1 },
                ],
            ),
        ),
        [
            'egress:pools[1].provider: already serves pool "a": a static provider serves one pool (a proxy must never be in two leases at once) (got "byo")',
        ],
    );
    assert.deepEqual(
        problems(
            cfg(
                ["http://127.0.0.1:1"],
                [{ name: "byo", provider: "byo", replicas: 1, replaceUnhealthyAfterSeconds: 60 }],
            ),
        ),
        [
            "egress:pools[0].replaceUnhealthyAfterSeconds: must be 0 or unset: members of a `static` provider are never replaced (got 60)",
        ],
    );
});

test("scaling a static pool is refused with a config error (the CLI's `egress scale`)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-static-stack-"));
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.writeFileSync(
        path.join(dir, "stacks", "Pulumi.s.yaml"),
        JSON.stringify({
            config: {
                "egress:providers": { byo: { type: "static", proxies: ["http://127.0.0.1:1"] } },
                "egress:pools": [{ name: "byo", provider: "byo", replicas: 1 }],
            },
        }),
    );
    assert.throws(
        () => checkReplicas(dir, "s", "byo", "3"),
        (e: Error) =>
            e instanceof ConfigError &&
            /egress:pools\[0\]: pool "byo" cannot be scaled: its 1 member\(s\) follow provider "byo" \(kind `static`\); change that entry instead/.test(
                e.message,
            ),
    );
    fs.rmSync(dir, { recursive: true, force: true });
});

test("gc has nothing to collect for a static entry; doctor and preflight have nothing to say", async () => {
    const { collectGarbage } = await import("../../src/gc");
    const report = await collectGarbage(
        { byo: { type: "static", proxies: ["http://127.0.0.1:1"] } },
        {
            project: "egress",
            stack: "s",
            installation: TEST_INSTALLATION.id,
            stateIds: new Set(),
            runDir: root,
            delete: true,
        },
    );
    assert.deepEqual(report, {
        ok: true,
        dryRun: false,
        providers: [{ provider: "byo", kind: "static", ok: true, found: 0, deleted: 0, orphans: [] }],
    });
    const { kindOf } = await import("../../components/registry");
    const kind = kindOf({ type: "static" });
    assert.equal(kind.doctor, undefined);
    assert.equal(kind.preflight, undefined);
    assert.equal(kind.goneCheck, undefined, "members are never judged gone: there is nothing to replace them with");
});
