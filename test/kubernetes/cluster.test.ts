/**
 * scripts/k8s-cluster.sh keeps no process behind: a cluster whose owner is SIGKILLed stops by itself,
 * `start` on a dir whose cluster still runs replaces it, and `stop` ends every part.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import { startKubeCluster } from "../helpers/kube-cluster";

import { waitFor } from "../helpers/harness";

const names = (pids: number[]) =>
    pids
        .map((p) => {
            try {
                return fs.readFileSync(`/proc/${p}/comm`, "utf8").trim();
            } catch {
                return "?";
            }
        })
        .sort();

test("the owner dies (SIGKILL): the guard stops every part, etcd included", { timeout: 120_000 }, async (t) => {
    // The owner is killed in every outcome: a cluster that cannot start must not leave this file
    // waiting 10 minutes for the `sleep` (node's runner waits for the children it holds handles to).
    const owner = cp.spawn("sleep", ["600"], { stdio: "ignore" });
    let cluster: ReturnType<typeof startKubeCluster> | undefined;
    try {
        cluster = startKubeCluster({ owner: owner.pid });
        t.diagnostic(`cluster start (binaries cached): ${cluster.startMs} ms`);
        assert.deepEqual(names(cluster.pids()), [
            "bash",
            "etcd",
            "kube-apiserver",
            "kube-controller",
            "kube-scheduler",
            "kwok",
        ]);
        owner.kill("SIGKILL");
        const at = Date.now();
        await waitFor("no process of the cluster left", async () => cluster!.pids().length === 0, 30_000, 100);
        t.diagnostic(`owner killed → cluster gone: ${Date.now() - at} ms`);
    } finally {
        owner.kill("SIGKILL");
        cluster?.stop();
    }
});

test("start on a running cluster's dir replaces it; stop leaves nothing", { timeout: 120_000 }, async () => {
    const first = startKubeCluster();
    const before = first.pids();
    const second = startKubeCluster({ dir: first.dir });
    const after = second.pids();
    assert.equal(after.filter((p) => before.includes(p)).length, 0, "no process of the first cluster survives");
    assert.equal(names(after).length, 6);
    assert.equal((await second.api("GET", "/readyz")).status, 200);
    second.stop();
    assert.deepEqual(second.pids(), []);
    assert.equal(fs.existsSync(second.dir), false);
});
