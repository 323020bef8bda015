/**
 * A pool spread over shard stacks (`membersPerStack`, src/model/shards.ts, src/engine/fleet-driver.ts),
 * on the real engine with local members: a plain `up` lays the members out over the installation's stack
 * and its shards; a scale and a replacement run on the shards they touch alone; a scale down and a plain
 * `up` remove the shards no member needs; destroy leaves no stack, file or process behind.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import pino from "pino";
import { checkpointDir, checkpointResources } from "../../src/engine";
import { membersOf } from "../../src/engine/checkpoint";
import { replaceTargeted } from "../../src/fleet-ops/replace";
import { pidsMentioning, tempProject } from "../helpers/project";
import { runCli, testHome } from "../helpers/cli";
import { getViaProxy, startTargetServer } from "../helpers/net";
import type { ProxyMember } from "../../src/model";

const p = tempProject("sh", {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 5, membersPerStack: 2 }],
});
let target: Awaited<ReturnType<typeof startTargetServer>>;
after(async () => {
    await p.driver.destroy().catch(() => undefined);
    await target?.close();
    p.cleanup();
    home.cleanup();
});

/** The status of a GET through the member to the loopback target. */
async function probeThrough(m: ProxyMember): Promise<number> {
    target ??= await startTargetServer();
    return (await getViaProxy(m.port, `http://127.0.0.1:${target.port}/${m.id}`)).status;
}

const backend = path.join(p.dir, "backend");
/** Member ids per stack that has a checkpoint, from the checkpoint files. */
function layout(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const f of fs.readdirSync(checkpointDir(backend)).filter((n) => n.endsWith(".json"))) {
        const stack = f.slice(0, -5);
        out[stack] = membersOf(checkpointResources(backend, stack) ?? [])
            .map((m) => m.id)
            .sort();
    }
    return out;
}

const home = testHome();
const egress = (...args: string[]) =>
    runCli({ ...p.env, EGRESS_HOME: home.dir }, ["--cwd", p.dir, "--stack", "sh", "--json", ...args]);

async function scaleTo(n: number) {
    p.driver.setPoolCounts({ web: n });
    const target = await p.driver.countTargets({ web: n });
    assert.ok(target, "a count change names its targets");
    return p.driver.up({ refresh: false, target, targetDependents: true });
}

test("a plain up lays members out over the installation's stack and its shards, each serving", async () => {
    const r = await p.driver.up();
    assert.deepEqual(
        r.proxies!.map((m) => m.id),
        ["web-0", "web-1", "web-2", "web-3", "web-4"],
    );
    // sh.web.3 is the spare: empty, ready for the pool to grow into.
    assert.deepEqual(layout(), {
        sh: ["web-0", "web-1"],
        "sh.web.1": ["web-2", "web-3"],
        "sh.web.2": ["web-4"],
        "sh.web.3": [],
    });
    // A shard's stack file is the installation's (same config and salt).
    const main = fs.readFileSync(path.join(p.dir, "stacks", "Pulumi.sh.yaml"), "utf8");
    assert.equal(fs.readFileSync(path.join(p.dir, "stacks", "Pulumi.sh.web.2.yaml"), "utf8"), main);
    for (const m of r.proxies!) assert.equal(await probeThrough(m), 200, `${m.id} serves`);
    const installations = new Set(
        Object.keys(layout()).map(
            (s) =>
                checkpointResources(backend, s)!.find((x) => x.type.endsWith("installation:Identity"))?.outputs
                    ?.installation,
        ),
    );
    assert.equal(installations.size, 1, "every shard records the installation's identity");
});

test("egress scale runs on the shards its members land in; gc finds every stack's members known", async () => {
    const before = fs.statSync(path.join(checkpointDir(backend), "sh.json")).mtimeMs;
    const r = await egress("scale", "web", "7");
    assert.equal(r.code, 0, r.stderr);
    const body = JSON.parse(r.stdout);
    assert.equal(body.applied, 7);
    // Two members, a component and a process each: the spare shard was ready for web-6.
    assert.deepEqual(body.changes, { create: 4, same: 8 }, JSON.stringify(body.changes));
    assert.deepEqual(layout()["sh.web.2"], ["web-4", "web-5"]);
    assert.deepEqual(layout()["sh.web.3"], ["web-6"]);
    assert.equal(
        fs.statSync(path.join(checkpointDir(backend), "sh.json")).mtimeMs,
        before,
        "the installation's stack untouched",
    );
    assert.deepEqual(
        (await p.driver.proxies()).map((m) => m.id),
        ["web-0", "web-1", "web-2", "web-3", "web-4", "web-5", "web-6"],
    );
    const gc = await egress("gc");
    assert.equal(gc.code, 0, gc.stderr);
    assert.equal(JSON.parse(gc.stdout).orphans.length, 0, gc.stdout);
    p.driver.setPoolCounts({ web: 7 }); // the file says 7 now; the driver's own counts follow it
});

test("a replacement runs on each member's own stack, and the members come back serving", async () => {
    const r = await replaceTargeted(p.driver, ["web-0", "web-3"], pino({ level: "silent" }), { refresh: true });
    // Each member's process replaced: one in the installation's stack, one in shard 1.
    assert.equal(r.changes.replace, 2, JSON.stringify(r.changes));
    for (const m of (await p.driver.proxies()).filter((x) => ["web-0", "web-3"].includes(x.id)))
        assert.equal(await probeThrough(m), 200, `${m.id} serves again`);
});

test("a scale down and a plain up remove the shards no member needs; destroy removes the rest", async () => {
    await scaleTo(3);
    assert.deepEqual(layout()["sh.web.3"], []);
    p.driver.setPoolCounts({});
    p.writeConfig({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 3, membersPerStack: 2 }],
    });
    const r = await p.driver.up({ refresh: false });
    assert.deepEqual(
        r.proxies!.map((m) => m.id),
        ["web-0", "web-1", "web-2"],
    );
    assert.deepEqual(Object.keys(layout()).sort(), ["sh", "sh.web.1", "sh.web.2"], "shard 2 kept as the spare");
    assert.deepEqual(layout()["sh.web.2"], []);
    assert.ok(
        !fs.existsSync(path.join(p.dir, "stacks", "Pulumi.sh.web.3.yaml")),
        "a removed shard's stack file goes too",
    );
    await p.driver.destroy();
    assert.deepEqual(Object.keys(layout()), ["sh"]);
    assert.deepEqual(layout().sh, []);
    assert.deepEqual(pidsMentioning(path.join(p.dir, "run")), [], "no proxy process left");
});

test("changing membersPerStack while shards hold members is refused, naming the pool", async () => {
    await p.driver.up({ refresh: false });
    p.writeConfig({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 3 }],
    });
    await assert.rejects(
        p.driver.up({ refresh: false }),
        /pool web: shard stack sh\.web\.1 holds members.*membersPerStack is unset/,
    );
    // Scaled down to the installation stack's members first, the pool may stop sharding: its shards go.
    const pool = { name: "web", provider: "local", replicas: 2 };
    p.writeConfig({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ ...pool, membersPerStack: 2 }],
    });
    await p.driver.up({ refresh: false });
    p.writeConfig({ "egress:providers": { local: { type: "local" } }, "egress:pools": [pool] });
    const r = await p.driver.up({ refresh: false });
    assert.deepEqual(
        r.proxies!.map((m) => m.id),
        ["web-0", "web-1"],
    );
    assert.deepEqual(Object.keys(layout()), ["sh"], "the empty shards were removed");
});

test("egress forget finds a member in its shard", async () => {
    p.writeConfig({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 3, membersPerStack: 2 }],
    });
    await p.driver.up({ refresh: false });
    const dry = await p.driver.forget("web-2", false);
    assert.equal(dry.applied, false);
    assert.ok(
        dry.forgotten.some((r) => r.name === "web-2-process"),
        JSON.stringify(dry),
    );
    assert.deepEqual(layout()["sh.web.1"], ["web-2"], "a dry run changes nothing");
});

test("egress scale with other edits in the stack file runs a plain up, then count changes alone are targeted again", async () => {
    const pool = { name: "web", provider: "local", replicas: 3, membersPerStack: 2 };
    p.writeConfig({
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ ...pool, cooldownSeconds: 5 }],
    });
    const mainFile = path.join(checkpointDir(backend), "sh.json");
    const before = fs.statSync(mainFile).mtimeMs;
    const edited = await egress("scale", "web", "4");
    assert.equal(edited.code, 0, edited.stderr);
    assert.ok(fs.statSync(mainFile).mtimeMs > before, "a plain up: the installation's stack ran too");
    const between = fs.statSync(mainFile).mtimeMs;
    const counted = await egress("scale", "web", "5");
    assert.equal(counted.code, 0, counted.stderr);
    assert.equal(JSON.parse(counted.stdout).applied, 5);
    assert.equal(fs.statSync(mainFile).mtimeMs, between, "a count change alone: the installation's stack untouched");
});
