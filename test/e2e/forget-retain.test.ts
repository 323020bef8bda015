/**
 * The way out for a host that can no longer be reached, on the real engine with local proxies:
 * `egress forget <member>` drops a member from state after saying what stays behind (which keeps running,
 * and `egress gc` lists), an unknown member exits 2 and changes nothing; `retainOnDelete` on a provider
 * entry leaves a removed pool's proxies running while state forgets them.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { cli, procProject, proxyProcesses } from "../helpers/processes";
import { getViaProxy, startTargetServer } from "../helpers/net";

const STACK = "fg";
const config = {
    "egress:providers": { local: { type: "local" }, old: { type: "local" } },
    "egress:pools": [
        { name: "a", provider: "local", replicas: 2, maxReplicas: 4 },
        { name: "b", provider: "old", replicas: 1, maxReplicas: 4 },
    ],
};
const p = procProject(STACK, config);
const stackFile = path.join(p.dir, "stacks", `Pulumi.${STACK}.yaml`);
const checkpoint = path.join(p.backendDir, ".pulumi", "stacks", "egress", `${STACK}.json`);
let target: Awaited<ReturnType<typeof startTargetServer>>;

const egress = (...args: string[]) => cli(p, args);
const json = (...args: string[]) => {
    const r = egress("--json", ...args);
    return { ...r, body: r.stdout.trim() ? JSON.parse(r.stdout.trim().split("\n").pop()!) : undefined };
};
const stateUrns = (): string[] =>
    (JSON.parse(fs.readFileSync(checkpoint, "utf8")).checkpoint.latest.resources as { urn: string }[]).map(
        (r) => r.urn,
    );
const stateResources = (): { urn: string; retainOnDelete?: boolean; custom?: boolean }[] =>
    JSON.parse(fs.readFileSync(checkpoint, "utf8")).checkpoint.latest.resources;
const editConfig = (fn: (c: any) => void) => {
    const doc = YAML.parse(fs.readFileSync(stackFile, "utf8"));
    fn(doc.config);
    fs.writeFileSync(stackFile, YAML.stringify(doc));
};
/** The proxy answers through itself: it is running, not just a pid. */
async function serves(port: number): Promise<boolean> {
    const r = await getViaProxy(port, `http://127.0.0.1:${target.port}/still-here`);
    return r.status === 200 && r.body === "hello /still-here";
}

before(async () => {
    target = await startTargetServer();
    const up = json("up");
    assert.equal(up.code, 0, up.stderr);
    assert.deepEqual(
        up.body.proxies.map((x: { id: string }) => x.id),
        ["a-0", "a-1", "b-0"],
    );
});

after(async () => {
    egress("destroy", "--yes", "--quiet");
    // What the tests left on purpose and did not collect themselves.
    egress("gc", "--delete");
    for (const pid of proxyProcesses(p).values()) process.kill(pid, "SIGKILL");
    await target.close();
    p.cleanup();
});

test("forget of an unknown member exits 2 and changes nothing", { timeout: 60_000 }, () => {
    const before = fs.readFileSync(checkpoint);
    const r = json("forget", "a-9", "--yes");
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.body.ok, false);
    assert.equal(r.body.error.type, "MemberNotInStateError");
    assert.match(r.body.error.message, /no member "a-9" in state \(members: a-0, a-1, b-0\); nothing was changed/);
    const text = egress("forget", "nope");
    assert.equal(text.code, 2);
    assert.match(text.stderr, /error: no member "nope" in state/);
    assert.deepEqual(fs.readFileSync(checkpoint), before, "state byte for byte");
});

test("forget without --yes shows what would stay behind, exits 2 and changes nothing", { timeout: 60_000 }, () => {
    const before = fs.readFileSync(checkpoint);
    const r = egress("forget", "a-1");
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /would forget member a-1/);
    assert.match(r.stdout, /These would stay behind/);
    assert.match(r.stdout, /fg-a-1/, "names the local process by its id");
    assert.match(r.stderr, /pass --yes to forget a-1/);
    assert.deepEqual(fs.readFileSync(checkpoint), before);
});

test(
    "forget --yes drops the member from state; its proxy keeps running; gc lists it; up brings the member back",
    { timeout: 180_000 },
    async () => {
        const pid = proxyProcesses(p).get("fg-a-1");
        assert.ok(pid, "a-1 runs");
        const port = (json("outputs").body.proxies as { id: string; port: number }[]).find((x) => x.id === "a-1")!.port;
        const r = json("forget", "a-1", "--yes");
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.body.ok, true);
        assert.equal(r.body.applied, true);
        assert.equal(r.body.stillPlanned, true, "the config still plans a-1");
        assert.deepEqual(
            r.body.staysBehind.map((t: { type: string; id: string }) => [t.type, t.id]),
            [["pulumi-nodejs:dynamic/egress:local:Process", "fg-a-1"]],
        );
        assert.ok(
            r.body.forgotten.some(
                (t: { type: string; name: string }) => t.type.endsWith("LocalProxy") && t.name === "a-1",
            ),
        );

        assert.ok(!stateUrns().some((u) => u.endsWith("::a-1") || u.includes("::a-1-")), "nothing of a-1 in state");
        assert.ok(
            stateUrns().some((u) => u.endsWith("::a-0")),
            "a-0 untouched",
        );
        assert.equal(proxyProcesses(p).get("fg-a-1"), pid, "the process stayed behind");
        assert.ok(await serves(port), "and still serves");
        assert.deepEqual(
            (json("outputs").body.proxies as { id: string }[]).map((x) => x.id),
            ["a-0", "b-0"],
            "outputs no longer advertise it",
        );

        const gc = json("gc");
        assert.equal(gc.code, 0, gc.stderr);
        assert.deepEqual(
            gc.body.orphans.map((o: { name: string; type: string }) => [o.name, o.type]),
            [["fg-a-1", "process"]],
        );
        const del = json("gc", "--delete");
        assert.equal(del.code, 0, del.stderr);
        assert.equal(proxyProcesses(p).get("fg-a-1"), undefined, "gc --delete stopped it");

        const up = json("up");
        assert.equal(up.code, 0, up.stderr);
        assert.deepEqual(
            up.body.proxies.map((x: { id: string }) => x.id),
            ["a-0", "a-1", "b-0"],
        );
        assert.equal(json("gc").body.orphans.length, 0);
    },
);

test(
    "retainOnDelete on a provider entry: a pool removed from config leaves its proxy running, state forgets it, gc lists it",
    { timeout: 180_000 },
    async () => {
        // Set on an existing stack: one `up` records it in state (no resource changes).
        editConfig((c) => (c["egress:providers"].old.retainOnDelete = true));
        const rec = json("up");
        assert.equal(rec.code, 0, rec.stderr);
        assert.deepEqual(
            Object.keys(rec.body.changes).filter((k) => k !== "same"),
            [],
            "recording the option changes nothing",
        );
        const bRes = stateResources().filter((r) => r.urn.includes("::b-0") && r.custom);
        assert.ok(
            bRes.length > 0 && bRes.every((r) => r.retainOnDelete === true),
            "b's resources carry retainOnDelete in state",
        );
        assert.ok(
            stateResources()
                .filter((r) => r.urn.includes("::a-0") && r.custom)
                .every((r) => !r.retainOnDelete),
            "other entries are unaffected",
        );

        const pid = proxyProcesses(p).get("fg-b-0");
        assert.ok(pid, "b-0 runs");
        const port = (json("outputs").body.proxies as { id: string; port: number }[]).find((x) => x.id === "b-0")!.port;
        editConfig((c) => (c["egress:pools"] = c["egress:pools"].filter((x: { name: string }) => x.name !== "b")));
        const up = json("up");
        assert.equal(up.code, 0, up.stderr);
        assert.deepEqual(
            up.body.proxies.map((x: { id: string }) => x.id),
            ["a-0", "a-1"],
        );
        assert.ok(!stateUrns().some((u) => /::b(-0)?(-|$)/.test(u.split("::").pop()!)), "nothing of pool b in state");
        assert.equal(proxyProcesses(p).get("fg-b-0"), pid, "b-0's process was retained");
        assert.ok(await serves(port), "and still serves");

        const gc = json("gc");
        assert.deepEqual(
            gc.body.orphans.map((o: { name: string; provider: string }) => o.name),
            ["fg-b-0"],
        );
        assert.equal(json("gc", "--delete").code, 0);
        assert.equal(proxyProcesses(p).get("fg-b-0"), undefined);
    },
);
