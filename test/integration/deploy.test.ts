/**
 * deploy/: each artefact checked with its own tool where Debian has one (systemd-analyze, promtool), and
 * for what no tool here can run (the Containerfile: no registry access), that it references what exists.
 * A missing tool fails the test: a check that cannot run is not a pass.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { dashboardExprs, promtool } from "../helpers/metrics";
import { serviceSection, systemdAnalyze } from "../helpers/deploy";

const deploy = (f: string) => path.join(PACKAGE_ROOT, "deploy", f);

test("systemd unit: systemd-analyze verify is clean, it is hardened, and its /opt/egress paths exist in the repo", () => {
    const r = systemdAnalyze(["verify", deploy("egress.service")]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), "", `no warnings:\n${r.stderr}`);
    const unit = fs.readFileSync(deploy("egress.service"), "utf8");
    const s = serviceSection(unit);
    assert.ok(s.get("DynamicUser")?.[0] === "yes" || s.has("User"), "DynamicUser or a dedicated user");
    for (const [k, v] of [
        ["ProtectSystem", "strict"],
        ["NoNewPrivileges", "yes"],
        ["ProtectHome", "yes"],
        ["PrivateTmp", "yes"],
        ["CapabilityBoundingSet", ""],
    ])
        assert.deepEqual(s.get(k), [v], `${k}=${v}`);
    assert.ok(!s.has("MemoryDenyWriteExecute"), "V8's JIT needs W+X pages");
    for (const m of unit.matchAll(/\/opt\/egress\/([\w./-]+)/g))
        assert.ok(fs.existsSync(path.join(PACKAGE_ROOT, m[1])), `${m[1]} exists (built by npm run setup)`);
    const security = systemdAnalyze(["security", "--offline=true", deploy("egress.service")]);
    const exposure = /Overall exposure level for egress\.service: ([\d.]+)/.exec(security.stdout);
    assert.ok(exposure, security.stdout + security.stderr);
    assert.ok(Number(exposure[1]) <= 2.5, `systemd rates the exposure ${exposure[1]} (at most 2.5 wanted)`);
});

test("alert rules: promtool check rules passes, and promtool test rules shows each alert firing when it should", () => {
    const check = promtool(["check", "rules", deploy("prometheus-alerts.yml")]);
    assert.equal(check.code, 0, check.out);
    const names = (
        YAML.parse(fs.readFileSync(deploy("prometheus-alerts.yml"), "utf8")).groups[0].rules as { alert: string }[]
    ).map((r) => r.alert);
    for (const a of ["EgressPoolBelowDesired", "EgressNoHealthyProxy", "EgressHealsFailing", "EgressProviderDown"])
        assert.ok(names.includes(a), a);
    const tests = promtool(["test", "rules", deploy("prometheus-alerts.test.yml")]);
    assert.equal(tests.code, 0, tests.out);
    const tested = new Set(
        [...fs.readFileSync(deploy("prometheus-alerts.test.yml"), "utf8").matchAll(/alertname: (\w+)/g)].map(
            (m) => m[1],
        ),
    );
    assert.deepEqual(
        names.filter((n) => !tested.has(n)),
        [],
        "every alert has a promtool test",
    );
});

test("Grafana dashboard: valid JSON, every panel has a query, and every query is valid PromQL (promtool)", () => {
    const doc = JSON.parse(fs.readFileSync(deploy("grafana-dashboard.json"), "utf8"));
    assert.equal(typeof doc.title, "string");
    assert.equal(typeof doc.uid, "string");
    assert.ok(doc.panels.length >= 10);
    for (const p of doc.panels)
        assert.ok(
            p.targets?.length > 0 && p.targets.every((t: { expr: string }) => t.expr.trim()),
            `panel "${p.title}" queries something`,
        );
    // promtool parses PromQL in rule files only: each expression becomes a recording rule.
    const exprs = dashboardExprs();
    const rules = {
        groups: [{ name: "dashboard", rules: exprs.map((expr, i) => ({ record: `dashboard:query_${i}`, expr })) }],
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-dashboard-"));
    try {
        fs.writeFileSync(path.join(dir, "rules.yml"), YAML.stringify(rules));
        const r = promtool(["check", "rules", path.join(dir, "rules.yml")]);
        assert.equal(r.code, 0, r.out);
        assert.match(r.out, new RegExp(`SUCCESS: ${exprs.length} rules found`));
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("Containerfile: every COPY source exists, the build runs setup, the image runs the built CLI unprivileged", () => {
    const text = fs.readFileSync(deploy("Containerfile"), "utf8");
    const lines = text
        .replace(/\\\n/g, " ")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith("#"));
    assert.ok(lines[0].startsWith("FROM "), "starts with FROM");
    const copies = lines.filter((l) => l.startsWith("COPY ") && !l.includes("--from="));
    assert.ok(copies.length >= 5);
    for (const c of copies) {
        const parts = c
            .split(/\s+/)
            .slice(1)
            .filter((p) => !p.startsWith("--"));
        for (const src of parts.slice(0, -1))
            assert.ok(fs.existsSync(path.join(PACKAGE_ROOT, src)), `COPY source ${src} exists`);
    }
    // What the tsconfig compiles and setup needs must be copied (minus tests and benches).
    for (const needed of [
        "package.json",
        "package-lock.json",
        "tsconfig.json",
        "Pulumi.yaml",
        "src",
        "components",
        "tools",
        "scripts",
    ])
        assert.ok(
            copies.some((c) => c.split(/\s+/).includes(needed) || c.split(/\s+/).includes(`./${needed}`)),
            `${needed} is copied`,
        );
    // A local package (`file:<dir>`) must be there before `npm ci` links it.
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8"));
    const ci = lines.findIndex((l) => /^RUN npm ci\b/.test(l));
    for (const spec of Object.values<string>(pkg.dependencies).filter((v) => v.startsWith("file:"))) {
        const dir = spec.slice("file:".length);
        const at = lines.findIndex((l) => l.startsWith("COPY ") && l.split(/\s+/).includes(dir));
        assert.ok(at >= 0 && at < ci, `${dir} (a file: dependency) is copied before npm ci`);
    }
    assert.ok(
        lines.some((l) => /^RUN .*scripts\/setup\.sh/.test(l)),
        "the build runs scripts/setup.sh",
    );
    const user = lines.filter((l) => l.startsWith("USER ")).pop();
    assert.ok(user && user !== "USER root" && user !== "USER 0", "runs as an unprivileged user");
    assert.match(text, /\/opt\/egress\/dist\/src\/cli\.js serve/);
    assert.ok(fs.existsSync(path.join(PACKAGE_ROOT, "src", "cli.ts")));
});
