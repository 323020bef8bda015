/**
 * What the real Kubernetes test cluster costs: the cached build check, cluster start, `up` / scale /
 * destroy of N kubernetes members through the real provider plugin, and the RAM of the cluster's
 * processes (and the plugin's, sampled during `up`). Side by side with the local kind for the same N.
 * Run: node dist/bench/k8s.js [3,10]   (builds the binaries first if the cache is cold: ~11 min)
 */
import * as fs from "node:fs";
import { buildKubeBinaries, startKubeCluster, KubeCluster } from "../test/helpers/kube-cluster";
import { tempProject } from "../test/helpers/project";
import { benchTable } from "./table";

const secs = (ms: number) => (ms / 1000).toFixed(1) + " s";
const mb = (kb: number) => (kb / 1024).toFixed(0) + " MB";

/** Resident memory (kB) of the processes whose argv mentions `text`. */
function rssKb(match: (cmdline: string) => boolean): number {
    let total = 0;
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
        try {
            if (!match(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"))) continue;
            total += Number(/^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
        } catch {
            /* exited meanwhile */
        }
    }
    return total;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
    const s = Date.now();
    await fn();
    return Date.now() - s;
}

async function run(kind: "kubernetes" | "local", n: number, cluster: KubeCluster): Promise<string[]> {
    const ns = `bench-${kind}-${n}`;
    if (kind === "kubernetes") await cluster.createNamespace(ns);
    const provider =
        kind === "kubernetes"
            ? { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: ns }
            : { type: "local" };
    const config = (replicas: number) => ({
        "egress:providers": { p: provider },
        "egress:pools": [{ name: "b", provider: "p", replicas, maxReplicas: 1000 }],
    });
    const p = tempProject("bench", config(n));
    let pluginPeak = 0;
    const sampler = setInterval(() => {
        pluginPeak = Math.max(
            pluginPeak,
            rssKb((c) => c.startsWith(`${cluster.bin}/pulumi-resource-kubernetes`)),
        );
    }, 200);
    try {
        const up = await timed(() => p.driver.up({ refresh: false }));
        const clusterRss = rssKb((c) => c.includes(cluster.dir));
        p.writeConfig(config(1));
        const down = await timed(() => p.driver.up({ refresh: false }));
        const destroy = await timed(() => p.driver.destroy());
        return [
            `${kind} ×${n}`,
            secs(up),
            secs(down),
            secs(destroy),
            kind === "kubernetes" ? mb(clusterRss) : "-",
            kind === "kubernetes" ? mb(pluginPeak) : "-",
        ];
    } finally {
        clearInterval(sampler);
        p.cleanup();
    }
}

async function main(): Promise<void> {
    const sizes = (process.argv[2] ?? "3,10").split(",").map(Number);
    buildKubeBinaries(); // cold: builds; the timed call below is the cached check every test file pays
    const check = Date.now();
    buildKubeBinaries();
    const buildCheck = Date.now() - check;
    const cluster = startKubeCluster();
    try {
        const idle = rssKb((c) => c.includes(cluster.dir));
        console.log(
            benchTable(
                ["cluster", "value"],
                [
                    ["cached build check", secs(buildCheck)],
                    ["cluster start", secs(cluster.startMs)],
                    ["cluster RSS, idle", mb(idle)],
                ],
            ),
        );
        console.log();
        const rows: string[][] = [];
        for (const n of sizes)
            for (const kind of ["kubernetes", "local"] as const) rows.push(await run(kind, n, cluster));
        console.log(
            benchTable(["members", "up", `scale → 1`, "destroy", "cluster RSS after up", "plugin RSS peak"], rows),
        );
    } finally {
        cluster.stop();
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
