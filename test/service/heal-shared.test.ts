/**
 * Self-healing when members share a process (`membersPerProcess: 2`, docs/local.md): a SIGKILL of one
 * host takes its two members; the loop finds both gone and repairs them, the other host's members keep
 * their process and port throughout; scaled down afterwards, an emptied host exits and nothing is left
 * in the state dir but the files of what serves.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { runningProxies } from "../../components/local/process";
import { hostArgvOf } from "../../components/local/hosts";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { settled, teardown, waitFor } from "../helpers/harness";

let svc: TestService;
const stateDir = () => path.join(svc.runDir, "local", "svc");
const MEMBERS = ["web-0", "web-1", "web-2", "web-3"];
/** member → host pid, from the processes that serve them now. */
const hostPids = () => new Map([...runningProxies(stateDir())].map(([id, pids]) => [id.replace(/^svc-/, ""), pids[0]]));
const proxies = async () => (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies as any[];
const allHealthy = (ids: string[]) => async () => {
    const p = await proxies();
    return ids.every((id) => p.find((x) => x.id === id)?.health === "healthy") ? p : undefined;
};

const cleanup = teardown();
before(async () => {
    svc = await startTestService(
        {
            "egress:providers": { local: { type: "local", membersPerProcess: 2 } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 4, maxReplicas: 4, maxSurge: 2 }],
        },
        { probeIntervalMs: 300, reconcileIntervalMs: 500, healBackoff: { baseMs: 4000, maxMs: 8000 } },
    );
    cleanup.own(svc);
    await waitFor("4 healthy proxies after converge", allHealthy(MEMBERS), 60_000);
});

test(
    "four members, two processes; a killed process's two members are repaired, the other two untouched",
    { timeout: 120_000 },
    async () => {
        const before = hostPids();
        assert.equal(new Set(before.values()).size, 2, JSON.stringify([...before]));
        const victim = before.get("web-1")!;
        const hit = MEMBERS.filter((m) => before.get(m) === victim);
        const spared = MEMBERS.filter((m) => before.get(m) !== victim);
        const portsBefore = new Map((await proxies()).map((p) => [p.id, p.url]));
        const killedAt = Date.now();
        process.kill(victim, "SIGKILL");
        await waitFor(
            "both members of the killed process repaired",
            async () => {
                const ops = (
                    (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]
                ).filter((o) => o.kind === "heal" && Date.parse(o.createdAt) >= killedAt && o.status === "succeeded");
                return hit.every((m) => ops.some((o) => o.members.includes(m)));
            },
            90_000,
            100,
        );
        await waitFor("all four healthy again", allHealthy(MEMBERS), 30_000, 100);
        const after = hostPids();
        for (const m of hit) assert.notEqual(after.get(m), victim, `${m} serves from a new process`);
        const now = new Map((await proxies()).map((p) => [p.id, p.url]));
        for (const m of spared) {
            assert.equal(after.get(m), before.get(m), `${m} kept its process`);
            assert.equal(now.get(m), portsBefore.get(m), `${m} kept its address`);
        }
        const healed = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[];
        assert.ok(
            healed
                .filter((o) => o.kind === "heal" && Date.parse(o.createdAt) >= killedAt)
                .every((o) => o.members.every((m: string) => hit.includes(m))),
            "no heal touched a member of the live process",
        );
    },
);

test(
    "scaled to 1: emptied processes exit, and the state dir holds the files of what serves only",
    { timeout: 120_000 },
    async () => {
        const r = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 1 } });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        const op = await settled(svc, r.body.operation.id);
        assert.equal(op.status, "succeeded", op.error);
        const [[id, [pid]]] = [...runningProxies(stateDir())];
        assert.equal(id, "svc-web-0");
        const host = hostArgvOf(pid)!.host;
        await waitFor(
            "only web-0's ready file and its host's log left",
            async () =>
                JSON.stringify(fs.readdirSync(stateDir()).sort()) === JSON.stringify([`${host}.log`, "svc-web-0.json"]),
            15_000,
            100,
        ).catch((e) =>
            assert.fail(
                `${e.message}: ${fs.readdirSync(stateDir())}; hosts ${fs
                    .readdirSync("/proc")
                    .filter((p) => /^\d+$/.test(p) && hostArgvOf(Number(p))?.dir === stateDir())
                    .map((p) => `${p}=${hostArgvOf(Number(p))!.host}`)}`,
            ),
        );
        // An emptied host removes its files, then exits: the exit may come a moment after the files went.
        const hosts = () =>
            fs
                .readdirSync("/proc")
                .filter((e) => /^\d+$/.test(e) && hostArgvOf(Number(e))?.dir === stateDir())
                .map(Number);
        await waitFor("the emptied host processes to exit", async () => hosts().length === 1, 10_000, 100).catch(
            () => undefined,
        );
        assert.deepEqual(hosts(), [pid], "one host process left for the stack");
    },
);
