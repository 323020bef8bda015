/**
 * deploy/ for several replicas on one host: deploy/haproxy.cfg passes `haproxy -c` (as shipped and as
 * the tests render it), binds loopback only, runs the API in mode http and the gateway in mode tcp with
 * /readyz checks on the API port; deploy/egress@.service passes `systemd-analyze verify` and `security`,
 * keeps egress.service's hardening, and its ports per instance are the ones haproxy.cfg sends to.
 * A missing tool fails the test: a check that cannot run is not a pass.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { serviceSection, systemdAnalyze } from "../helpers/deploy";
import { HAPROXY_CFG, haproxyBin, renderHaproxyCfg } from "../helpers/haproxy";

const deploy = (f: string) => path.join(PACKAGE_ROOT, "deploy", f);

/** The cfg's sections: "frontend egress_api" → its lines (trimmed, no comments). */
function sections(cfg: string): Map<string, string[]> {
    const out = new Map<string, string[]>();
    let cur: string[] = [];
    for (const line of cfg.split("\n")) {
        const t = line.replace(/#.*/, "").trim();
        if (!t) continue;
        if (!/^\s/.test(line)) out.set(t, (cur = []));
        else cur.push(t);
    }
    return out;
}

const check = (file: string) => cp.spawnSync(haproxyBin(), ["-c", "-f", file], { encoding: "utf8", timeout: 30_000 });

test("haproxy.cfg: haproxy -c passes as shipped and as the tests render it", () => {
    const shipped = check(HAPROXY_CFG);
    assert.equal(shipped.status, 0, shipped.stdout + shipped.stderr);
    assert.match(shipped.stdout + shipped.stderr, /Configuration file is valid/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-haproxy-check-"));
    try {
        const file = path.join(dir, "haproxy.cfg");
        const replicas = [1, 2].map((i) => ({ apiPort: 18080 + i, gatewayPort: 18888 + i }));
        fs.writeFileSync(file, renderHaproxyCfg({ apiPort: 18080, gatewayPort: 18888, replicas, dir }));
        const rendered = check(file);
        assert.equal(rendered.status, 0, rendered.stdout + rendered.stderr);
        const s = sections(fs.readFileSync(file, "utf8"));
        assert.deepEqual(
            s.get("backend egress_gateway_replicas")?.filter((l) => l.startsWith("server ")),
            ["server egress-1 127.0.0.1:18889 check port 18081", "server egress-2 127.0.0.1:18890 check port 18082"],
        );
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("haproxy.cfg: loopback binds, API in mode http, gateway in mode tcp, /readyz checks on the API port, long tunnels", () => {
    const s = sections(fs.readFileSync(HAPROXY_CFG, "utf8"));
    const binds = [...s.values()].flat().filter((l) => l.startsWith("bind "));
    assert.deepEqual(binds, ["bind 127.0.0.1:8080", "bind 127.0.0.1:8888"], "nothing open beyond loopback");
    assert.ok(s.get("frontend egress_api")?.includes("mode http"));
    assert.ok(s.get("backend egress_api_replicas")?.includes("mode http"));
    assert.ok(s.get("frontend egress_gateway")?.includes("mode tcp"));
    assert.ok(s.get("backend egress_gateway_replicas")?.includes("mode tcp"));
    const tunnel = s.get("defaults")?.find((l) => l.startsWith("timeout tunnel "));
    assert.match(tunnel ?? "", /^timeout tunnel (\d+h|[6-9]\dm|\d{4,}s)$/, "a CONNECT tunnel may last an hour");
    for (const b of ["backend egress_api_replicas", "backend egress_gateway_replicas"]) {
        assert.ok(s.get(b)?.includes("option httpchk"), `${b} checks over HTTP`);
        assert.ok(
            s.get(b)?.some((l) => /^http-check send meth GET uri \/readyz\b/.test(l)),
            `${b} asks GET /readyz`,
        );
        assert.ok(s.get(b)?.includes("http-check expect status 200"), `${b} wants 200`);
    }
    const servers = (b: string) =>
        s
            .get(b)!
            .filter((l) => l.startsWith("server "))
            .map((l) => l.split(/\s+/));
    const api = servers("backend egress_api_replicas");
    const gw = servers("backend egress_gateway_replicas");
    assert.equal(gw.length, api.length, "one gateway server per API server");
    gw.forEach((g, i) => {
        assert.ok(api[i].includes("check"), `${api[i][1]} is checked`);
        const at = g.indexOf("port");
        assert.ok(g.includes("check") && at > 0, `${g[1]} is checked on another port`);
        assert.equal(`127.0.0.1:${g[at + 1]}`, api[i][2], `${g[1]} is checked on its replica's API port`);
    });
});

test("egress@.service: systemd-analyze verify and security pass, egress.service's hardening is kept", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-unit-"));
    try {
        // A template is verified as one of its instances.
        fs.copyFileSync(deploy("egress@.service"), path.join(dir, "egress@.service"));
        const verify = systemdAnalyze(["verify", path.join(dir, "egress@2.service")]);
        assert.equal(verify.status, 0, verify.stderr);
        assert.equal(verify.stderr.trim(), "", `no warnings:\n${verify.stderr}`);
        const security = systemdAnalyze(["security", "--offline=true", path.join(dir, "egress@2.service")]);
        const exposure = /Overall exposure level for egress@2\.service: ([\d.]+)/.exec(security.stdout);
        assert.ok(exposure, security.stdout + security.stderr);
        assert.ok(Number(exposure[1]) <= 2.5, `systemd rates the exposure ${exposure[1]} (at most 2.5 wanted)`);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
    const single = serviceSection(fs.readFileSync(deploy("egress.service"), "utf8"));
    const template = serviceSection(fs.readFileSync(deploy("egress@.service"), "utf8"));
    const differs = new Set(["Environment", "EnvironmentFile", "ExecStart"]);
    for (const [k, v] of single) if (!differs.has(k)) assert.deepEqual(template.get(k), v, `${k} as in egress.service`);
    assert.deepEqual(template.get("User"), ["egress"], "one dynamic user shared by every instance");
    for (const e of single.get("Environment")!.filter((e) => !e.startsWith("EGRESS_PORT=")))
        assert.ok(template.get("Environment")?.includes(e), `Environment=${e} as in egress.service`);
});

/** The template's ExecStart for instance `i`, run by /bin/sh with /bin/echo in node's place: the argv serve gets. */
function execStart(i: string): { status: number | null; stdout: string; stderr: string } {
    const unit = serviceSection(fs.readFileSync(deploy("egress@.service"), "utf8"));
    const m = /^\/bin\/sh -c '(.*)'$/.exec(unit.get("ExecStart")![0]);
    assert.ok(m, "ExecStart is /bin/sh -c '<script>'");
    // What systemd does before exec: %i is the instance, $$ a literal $.
    const script = m[1].replaceAll("%i", i).replaceAll("$$", "$").replace("exec /usr/bin/node ", "exec /bin/echo ");
    return cp.spawnSync("/bin/sh", ["-c", script], { encoding: "utf8" });
}

test("egress@.service: instance i serves on the ports haproxy.cfg's i-th servers point at; a bad instance exits 2", () => {
    const s = sections(fs.readFileSync(HAPROXY_CFG, "utf8"));
    const port = (b: string, i: number) => {
        const servers = s.get(b)!.filter((l) => l.startsWith("server "));
        return Number(servers[i - 1].split(/\s+/)[2].split(":")[1]);
    };
    for (const i of [1, 2, 3]) {
        const r = execStart(String(i));
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stdout, /^\/opt\/egress\/dist\/src\/cli\.js serve --cwd \/var\/lib\/egress\/project /);
        const argv = r.stdout.trim().split(" ");
        assert.equal(Number(argv[argv.indexOf("--port") + 1]), port("backend egress_api_replicas", i));
        assert.equal(Number(argv[argv.indexOf("--gateway-port") + 1]), port("backend egress_gateway_replicas", i));
    }
    for (const bad of ["0", "x", "1;id", "100"]) {
        const r = execStart(bad);
        assert.equal(r.status, 2, `instance "${bad}" is refused`);
        assert.equal(r.stdout, "", `instance "${bad}" starts nothing`);
    }
});
