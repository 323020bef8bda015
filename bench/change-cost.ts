/**
 * What one change costs as the fleet grows (issue 33): a +10 scale, the -10 back (both as the service
 * runs them: an `up` that targets the members they add or remove, engine countTargets), one heal (a
 * targeted refresh and replace of one member) and one rotation replacement (the same, no refresh), beside
 * a plain `up` with nothing to do (every resource diffed), on a stack of `small` local members and on one
 * of `large`, side by side. Both stacks are
 * brought up once; then each round runs the same three steps on each stack in turn (interleaved, so
 * load on the machine hits both alike), and the table shows each step's median over the rounds, the
 * large stack's median over the small one's (the goal: ≤ 1.5× at 1,000 against 10), and the
 * checkpoint's size. Real engine, file backend, throwaway projects; the stacks are destroyed at the end.
 * Run: node dist/bench/change-cost.js [small=10] [large=100] [rounds=3] [membersPerProcess=1] [membersPerStack] [kind=local]
 * (a thousand local members need `membersPerProcess` of 20 or more to fit in memory: docs/local.md;
 * `membersPerStack` spreads both pools over shard stacks of that many, src/model/shards.ts, 0 = unset;
 * kind `kubernetes` runs the members as Deployments on the test cluster, test/helpers/kube-cluster.ts;
 * kind `gcp` runs the member resources against the Compute stand-in, the gcp provider's resources stood in
 * for, test/helpers/gcp-stand-in.ts: the engine's and egress's cost, not GCE's).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { checkpointDir } from "../src/engine/checkpoint";
import { tempProject } from "../test/helpers/project";
import { benchTable } from "./table";
import { replaceTargeted } from "../src/fleet-ops/replace";
import pino from "pino";
import { KubeCluster, startKubeCluster } from "../test/helpers/kube-cluster";
import { GCP_PROJECT, installGcpStandIn } from "../test/helpers/gcp-stand-in";
import type { FakeCompute } from "../test/fixtures/gcp/fake-compute";

const quiet = pino({ level: "silent" });
/** The test cluster, with kind `kubernetes`. */
let cluster: KubeCluster | undefined;
/** The Compute stand-in, with kind `gcp`. */
let gcpFake: FakeCompute | undefined;

const STEPS = ["+10", "-10", "heal 1", "rotate 1", "plain up"] as const;
type Step = (typeof STEPS)[number];

interface Stack {
    members: number;
    p: ReturnType<typeof tempProject>;
    times: Record<Step, number[]>;
    checkpointBytes: number;
}

async function stack(members: number, membersPerProcess: number, membersPerStack?: number): Promise<Stack> {
    const pool = { name: "web", provider: "local", replicas: members, maxReplicas: members + 10 };
    const ns = `cc${members}`;
    if (cluster) await cluster.createNamespace(ns);
    const entry = cluster
        ? { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: ns }
        : gcpFake
          ? { type: "gcp", project: GCP_PROJECT, zones: ["europe-west1-b"], allowedSourceRanges: ["203.0.113.0/24"] }
          : { type: "local", membersPerProcess };
    const auth = gcpFake ? { auth: { username: "bench", password: "bench-password-0123456789" } } : {};
    const p = tempProject(`cc${members}`, {
        "egress:providers": { local: entry },
        "egress:pools": [{ ...pool, ...auth, ...(membersPerStack ? { membersPerStack } : {}) }],
    });
    const times = Object.fromEntries(STEPS.map((k) => [k, []])) as unknown as Record<Step, number[]>;
    return { members, p, times, checkpointBytes: 0 };
}

/** Runs the `up` of a scale to `count` members, as the service does (run-operation.ts); returns its seconds. */
async function scaleTo(s: Stack, count: number): Promise<number> {
    s.p.driver.setPoolCounts({ web: count });
    const started = Date.now();
    const target = await s.p.driver.countTargets({ web: count });
    await s.p.driver.up({ refresh: false, ...(target ? { target, targetDependents: true } : {}) });
    return (Date.now() - started) / 1000;
}

/** A plain `up` (from zero, or with nothing to do); returns its seconds. */
async function upAt(s: Stack, count: number): Promise<number> {
    s.p.driver.setPoolCounts({ web: count });
    const started = Date.now();
    await s.p.driver.up({ refresh: false });
    return (Date.now() - started) / 1000;
}

/** One member replaced as heal (refresh first) or rotation (no refresh) do it (control/replace.ts). */
async function replaceOne(s: Stack, refresh: boolean): Promise<number> {
    const started = Date.now();
    await replaceTargeted(s.p.driver, ["web-1"], quiet, { refresh });
    return (Date.now() - started) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
    const [small, large, rounds, perProcess] = [10, 100, 3, 1].map((d, i) => Number(process.argv[2 + i] ?? d));
    const perStack = Number(process.argv[6] ?? 0) || undefined;
    if (process.argv[7] === "kubernetes") cluster = startKubeCluster();
    if (process.argv[7] === "gcp") gcpFake = await installGcpStandIn();
    const stacks = [await stack(small, perProcess, perStack), await stack(large, perProcess, perStack)];
    try {
        for (const s of stacks) {
            const t = await upAt(s, s.members);
            console.error(`# ${s.members} members up from zero in ${t.toFixed(1)} s`);
        }
        for (let r = 1; r <= rounds; r++)
            for (const s of stacks) {
                s.times["+10"].push(await scaleTo(s, s.members + 10));
                s.times["-10"].push(await scaleTo(s, s.members));
                s.times["heal 1"].push(await replaceOne(s, true));
                s.times["rotate 1"].push(await replaceOne(s, false));
                s.times["plain up"].push(await upAt(s, s.members));
                // The largest checkpoint any run rewrites: the installation's stack, or a shard's.
                const dir = checkpointDir(path.join(s.p.dir, "backend"));
                const sizes = fs
                    .readdirSync(dir)
                    .filter((f) => f.endsWith(".json"))
                    .map((f) => fs.statSync(path.join(dir, f)).size);
                s.checkpointBytes = Math.max(...sizes);
                console.error(
                    `# round ${r}, ${s.members} members: ${STEPS.map((k) => s.times[k].at(-1)).join(" / ")} s`,
                );
            }
        const [a, b] = stacks;
        const rows = STEPS.map((k) => [
            k,
            median(a.times[k]).toFixed(2),
            median(b.times[k]).toFixed(2),
            `${(median(b.times[k]) / median(a.times[k])).toFixed(2)}×`,
        ]);
        rows.push([
            "largest checkpoint KB",
            (a.checkpointBytes / 1024).toFixed(1),
            (b.checkpointBytes / 1024).toFixed(1),
            "",
        ]);
        console.log(
            benchTable(["step (median of " + rounds + ", s)", `${small} members`, `${large} members`, "ratio"], rows),
        );
    } finally {
        for (const s of stacks) {
            s.p.driver.setPoolCounts({});
            const t0 = Date.now();
            await s.p.driver
                .destroy()
                .then(() =>
                    console.error(`# ${s.members} members destroyed in ${((Date.now() - t0) / 1000).toFixed(1)} s`),
                )
                .catch((e) => console.error(`destroy ${s.members}: ${(e as Error).message}`));
            s.p.cleanup();
        }
        cluster?.stop();
        await gcpFake?.close();
    }
}

main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
});
