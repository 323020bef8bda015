/**
 * `egress up` rolls a change that replaces members (the real engine, real local proxies), as the service
 * does (test/service/rolling.test.ts): a pool of 4 moved to another port range is replaced one member at
 * a time behind one surge member — sampled every 250 ms through the proxies themselves, never fewer than
 * 4 answer and never more than 5 run — the progress names each batch, `--json` is one document that
 * lists them, and the stack file is exactly as the person left it. A roll whose new members never pass
 * a probe stops, removes its surge and exits 1; Ctrl-C mid-roll exits 130; in both the stack file is
 * untouched, what runs is what state says, and the next `egress up` finishes the job. A pool with no room
 * to roll exits 2 and touches nothing.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { freeLoopbackPort, getViaProxy, startTargetServer } from "../helpers/net";
import { cli, cliAsync, procProject, ProcProject, proxyProcesses, spawnCli } from "../helpers/processes";
import { rollingPortRange } from "../helpers/rolling";
import { waitFor } from "../helpers/harness";

let p: ProcProject;
let target: { port: number; close(): Promise<void> };
const bases: number[] = [];
const file = () => path.join(p.dir, "stacks", `Pulumi.${p.stack}.yaml`);
const config = (basePort: number) => ({
    "egress:providers": { local: { type: "local", basePort } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 4, maxReplicas: 6 }],
});
/** Edits the stack file as a person would: the pool moves to `basePort`, nothing else changes (the salt stays). */
const moveTo = (basePort: number) => {
    const doc = YAML.parse(fs.readFileSync(file(), "utf8"));
    doc.config["egress:providers"].local.basePort = basePort;
    fs.writeFileSync(file(), YAML.stringify(doc));
};

before(async () => {
    // Port ranges of 5 (4 members and a surge member) that do not overlap.
    while (bases.length < 4) bases.push(await rollingPortRange(bases));
    p = procProject("roll", config(bases[0]));
    target = await startTargetServer();
    const first = cli(p, ["up", "--quiet"]);
    assert.equal(first.code, 0, first.stderr);
});
after(async () => {
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
    await target?.close();
});

/** Member id → port, from `egress outputs --json`; checked against the proxy processes that run. */
function outputsPorts(): Map<string, number> {
    const r = cli(p, ["outputs", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const proxies = JSON.parse(r.stdout).proxies as { id: string; port: number }[];
    assert.deepEqual(
        proxies.map((x) => `${p.stack}-${x.id}`).sort(),
        [...proxyProcesses(p).keys()].sort(),
        "the stack output lists exactly the proxies that run",
    );
    return new Map(proxies.map((x) => [x.id, x.port]));
}

const range = (base: number, n = 4) => Array.from({ length: n }, (_, i) => base + i);

/**
 * Every 250 ms: how many of `ports` carry a request to the target through their proxy, and how many
 * proxy processes run. Stopped by `stop()`, which answers every sample.
 */
function sample(ports: number[]): { stop(): Promise<{ healthy: number[]; running: number[] }> } {
    const healthy: number[] = [];
    const running: number[] = [];
    let on = true;
    const loop = (async () => {
        while (on) {
            const next = new Promise((r) => setTimeout(r, 250));
            const answers = await Promise.all(
                ports.map((port) =>
                    getViaProxy(port, `http://127.0.0.1:${target.port}/sample`, 1000).then(
                        (a) => a.status === 200 && a.body === "hello /sample",
                        () => false,
                    ),
                ),
            );
            healthy.push(answers.filter(Boolean).length);
            running.push(proxyProcesses(p).size);
            await next;
        }
    })();
    return {
        stop: async () => {
            on = false;
            await loop;
            return { healthy, running };
        },
    };
}

test(
    "a port change of a pool of 4 rolls one member at a time: ≥ 4 answer, ≤ 5 run, batches shown, stack file untouched",
    { timeout: 300_000 },
    async () => {
        assert.deepEqual([...outputsPorts().values()].sort(), range(bases[0]));
        moveTo(bases[1]);
        const edited = fs.readFileSync(file(), "utf8");
        const sampler = sample([...range(bases[0]), ...range(bases[1], 5)]);
        let r: Awaited<ReturnType<typeof cliAsync>>;
        let samples: { healthy: number[]; running: number[] };
        try {
            r = await cliAsync(p, ["up", "--json"], 240_000);
        } finally {
            samples = await sampler.stop();
        }
        assert.equal(r.code, 0, r.stderr);
        for (let i = 0; i < 4; i++)
            assert.match(r.stderr, new RegExp(`rolling web: batch ${i + 1} of 4 replaces web-${i}\\n`));
        assert.match(r.stderr, /rolling web: web-4 stand in while 4 members are replaced/);
        const out = JSON.parse(r.stdout); // one document: progress went to stderr
        assert.equal(out.ok, true);
        assert.deepEqual(out.rolling, [
            { pool: "web", replicas: 4, surge: ["web-4"], batches: [["web-0"], ["web-1"], ["web-2"], ["web-3"]] },
        ]);
        assert.deepEqual((out.proxies as { port: number }[]).map((x) => x.port).sort(), range(bases[1]));

        assert.ok(samples.healthy.length > 20, `sampled ${samples.healthy.length} times`);
        assert.ok(Math.min(...samples.healthy) >= 4, `never fewer than 4 answer: ${samples.healthy.join(" ")}`);
        assert.ok(Math.max(...samples.running) <= 5, `never more than 5 run: ${samples.running.join(" ")}`);
        assert.equal(Math.max(...samples.running), 5, "the surge member stood in");
        assert.equal(Math.max(...samples.healthy), 5, "and served");

        const ports = outputsPorts();
        assert.deepEqual([...ports.keys()].sort(), ["web-0", "web-1", "web-2", "web-3"]);
        assert.deepEqual([...ports.values()].sort(), range(bases[1]));
        assert.equal(fs.readFileSync(file(), "utf8"), edited, "the stack file is as the person left it");
        assert.equal(YAML.parse(edited).config["egress:pools"][0].replicas, 4);

        const again = cli(p, ["up", "--json", "--quiet"]);
        assert.equal(again.code, 0, again.stderr);
        assert.equal(JSON.parse(again.stdout).rolling, undefined, "nothing left to roll");
    },
);

test(
    "new members that never pass a probe: the roll stops, its surge goes, exit 1, nothing else changed",
    { timeout: 300_000 },
    async () => {
        const before = proxyProcesses(p);
        moveTo(bases[2]);
        const edited = fs.readFileSync(file(), "utf8");
        // Nothing listens there: every probe through the new member fails (the proxy answers 502).
        const closed = `http://127.0.0.1:${await freeLoopbackPort()}/v1/echo`;
        const r = await cliAsync(p, ["up", "--check-url", closed, "--health-timeout", "3"], 180_000);
        assert.equal(r.code, 1, r.stderr);
        assert.match(
            r.stderr,
            /error: the rolling change stopped: web-4 \(.+\) did not pass a health probe within 3 s/,
        );
        assert.match(r.stderr, /Replaced: none/);
        const ports = outputsPorts();
        assert.deepEqual([...ports.keys()].sort(), ["web-0", "web-1", "web-2", "web-3"], "the surge is gone");
        assert.deepEqual([...ports.values()].sort(), range(bases[1]), "the members keep their old config");
        assert.deepEqual(proxyProcesses(p), before, "the same processes run");
        assert.equal(fs.readFileSync(file(), "utf8"), edited, "the stack file is as the person left it");
    },
);

test(
    "Ctrl-C mid-roll: exit 130, the surge goes, the stack file is untouched; the next `up` finishes the roll",
    { timeout: 300_000 },
    async () => {
        const edited = fs.readFileSync(file(), "utf8"); // still moved to bases[2] by the test before
        const up = spawnCli(p, ["up", "--json"]);
        let stdout = "";
        let stderr = "";
        up.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
        up.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        const exited = new Promise<number | null>((res) => up.once("exit", (code) => res(code)));
        await waitFor("batch 2 to start", () => stderr.includes("batch 2 of 4 replaces web-1"), 120_000, 50);
        up.kill("SIGINT");
        assert.equal(await exited, 130, stderr);
        assert.match(stderr, /cancelling: the roll stops/);
        const out = JSON.parse(stdout);
        assert.equal(out.ok, false);
        assert.match(out.error.message, /interrupted/);
        // The members state holds (the stack output lags behind the roll's targeted runs until a plain `up`).
        const held = out.proxies as { id: string; port: number }[];
        assert.deepEqual(
            held.map((x) => `${p.stack}-${x.id}`).sort(),
            [...proxyProcesses(p).keys()].sort(),
            "the members printed are what runs",
        );
        assert.ok(!held.some((x) => x.id === "web-4"), `the surge is gone: ${held.map((x) => x.id).join(" ")}`);
        assert.equal(held.find((x) => x.id === "web-0")?.port, bases[2], "batch 1 was done");
        assert.equal(fs.readFileSync(file(), "utf8"), edited, "the stack file is as the person left it");

        const again = await cliAsync(p, ["up", "--json", "--quiet"], 240_000);
        assert.equal(again.code, 0, again.stderr);
        const rolled = JSON.parse(again.stdout).rolling[0].batches.flat();
        assert.ok(!rolled.includes("web-0") && rolled.includes("web-3"), `the rest rolled: ${rolled.join(" ")}`);
        assert.deepEqual([...outputsPorts().values()].sort(), range(bases[2]));
    },
);

test("a pool with no room to roll (at maxReplicas, maxUnavailable 0): exit 2 naming the ways out, nothing touched", async () => {
    const before = proxyProcesses(p);
    const good = fs.readFileSync(file(), "utf8");
    const doc = YAML.parse(good);
    doc.config["egress:providers"].local.basePort = bases[3];
    doc.config["egress:pools"][0].maxReplicas = 4;
    fs.writeFileSync(file(), YAML.stringify(doc));
    const edited = fs.readFileSync(file(), "utf8");
    try {
        const r = await cliAsync(p, ["up", "--json", "--quiet"], 120_000);
        assert.equal(r.code, 2, r.stderr);
        const out = JSON.parse(r.stdout);
        assert.equal(out.ok, false);
        assert.match(out.error.message, /pool web cannot roll its change: it is at maxReplicas \(4\).*--all-at-once/);
        assert.deepEqual(proxyProcesses(p), before, "the same processes run");
        assert.deepEqual([...outputsPorts().values()].sort(), range(bases[2]), "the members keep their config");
        assert.equal(fs.readFileSync(file(), "utf8"), edited, "the stack file is as the person left it");
    } finally {
        fs.writeFileSync(file(), good);
    }
});
