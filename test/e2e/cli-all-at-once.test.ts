/**
 * `egress up --all-at-once` and a change that replaces members (the real engine, local proxies): it opts
 * out of the roll (a plain `up` rolls: test/e2e/cli-rolling.test.ts) and replaces them together in one
 * update, with no surge member and no batches. A member only brought back because it died is a repair,
 * which a plain `up` does without rolling.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { freePortRange } from "../helpers/net";
import { cli, procProject, proxyProcesses } from "../helpers/processes";

const p = procProject("roll", {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2 }],
});
after(() => {
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
});

const setBasePort = (basePort: number) => {
    const file = path.join(p.dir, "stacks", `Pulumi.${p.stack}.yaml`);
    const doc = YAML.parse(fs.readFileSync(file, "utf8"));
    doc.config["egress:providers"].local.basePort = basePort;
    fs.writeFileSync(file, YAML.stringify(doc));
};

test(
    "up --all-at-once replaces members together, without surge or batches; a plain count change applies",
    { timeout: 300_000 },
    async () => {
        const first = cli(p, ["up", "--quiet"]);
        assert.equal(first.code, 0, first.stderr);
        const before = proxyProcesses(p);
        assert.equal(before.size, 2);

        p.setReplicas("web", 3);
        const grown = cli(p, ["up", "--quiet"]);
        assert.equal(grown.code, 0, `a count change replaces nothing: ${grown.stderr}`);
        assert.equal(proxyProcesses(p).size, 3);

        const base = await freePortRange(3);
        setBasePort(base);
        const replacedPids = proxyProcesses(p);
        const forced = cli(p, ["up", "--all-at-once", "--json"]);
        assert.equal(forced.code, 0, forced.stderr);
        assert.doesNotMatch(forced.stderr, /rolling/, "no batches, no surge");
        const out = JSON.parse(forced.stdout);
        assert.equal(out.rolling, undefined, "not rolled");
        const ports = (out.proxies as { id: string; port: number }[]).map((x) => x.port).sort();
        assert.deepEqual(ports, [base, base + 1, base + 2]);
        assert.deepEqual(
            (out.proxies as { id: string }[]).map((x) => x.id).sort(),
            ["web-0", "web-1", "web-2"],
            "no surge member was made",
        );
        const now = proxyProcesses(p);
        for (const [id, pid] of replacedPids) assert.notEqual(now.get(id), pid, `${id} replaced`);

        // A member that died behind egress's back is a repair, not a change: once a refresh has seen it
        // gone, a plain `up` brings it back without --all-at-once.
        const [deadId, dead] = [...proxyProcesses(p)].find(([id]) => id.endsWith("web-1"))!;
        process.kill(dead, "SIGKILL");
        const refresh = cli(p, ["refresh", "--quiet"]);
        assert.equal(refresh.code, 0, refresh.stderr);
        const repaired = cli(p, ["up", "--quiet"]);
        assert.equal(repaired.code, 0, `a dead member is repaired by a plain up: ${repaired.stderr}`);
        assert.equal(proxyProcesses(p).size, 3);
        assert.notEqual(proxyProcesses(p).get(deadId), dead, "web-1 runs again, as a new process");
    },
);
