/**
 * A Kubernetes pool spread over shard stacks (`membersPerStack`, src/engine/fleet-driver.ts) on the real
 * API server with kwok: each stack makes its own provider and config Secret, every member's Deployment
 * carries the installation's labels whatever stack holds it, a scale runs on the shards the new members
 * land in, and destroy leaves nothing labelled behind.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { tempProject } from "../helpers/project";
import { checkpointDir } from "../../src/engine";

const NS = "sharded";
const STACK = "ks";
let cluster: KubeCluster;
let project: ReturnType<typeof tempProject>;

const stackSel = `egress-project=egress,egress-stack=${STACK}`;
async function names(collection: string): Promise<string[]> {
    const r = await cluster.api("GET", `${collection}?labelSelector=${encodeURIComponent(stackSel)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body.items as any[]).map((o) => o.metadata.labels?.["egress-member"] ?? o.metadata.name).sort();
}
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;

before(async () => {
    cluster = startKubeCluster();
    await cluster.createNamespace(NS);
    project = tempProject(STACK, {
        "egress:providers": {
            k8s: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: NS },
        },
        "egress:pools": [{ name: "web", provider: "k8s", replicas: 3, maxReplicas: 10, membersPerStack: 2 }],
    });
});
after(async () => {
    await project?.driver.destroy().catch(() => undefined);
    project?.cleanup();
    cluster?.stop();
});

test(
    "members live in the installation's stack and its shards, each stack with its own Secret",
    { timeout: 300_000 },
    async () => {
        const r = await project.driver.up();
        assert.deepEqual(
            r.proxies!.map((m) => m.id),
            ["web-0", "web-1", "web-2"],
        );
        assert.deepEqual(await names(DEPLOYMENTS), ["web-0", "web-1", "web-2"]);
        const stacks = fs
            .readdirSync(checkpointDir(path.join(project.dir, "backend")))
            .filter((f) => f.endsWith(".json"))
            .sort();
        assert.deepEqual(stacks, ["ks.json", "ks.web.1.json", "ks.web.2.json"], "web-2's shard and the spare");
        assert.equal((await names(SECRETS)).length, 3, "a config Secret per stack");
    },
);

test(
    "a scale runs on the shards its members land in; destroy leaves nothing labelled",
    { timeout: 300_000 },
    async () => {
        project.driver.setPoolCounts({ web: 5 });
        const target = await project.driver.countTargets({ web: 5 });
        assert.ok(
            target?.every((u) => u.includes("::web-3") || u.includes("::web-4")),
            String(target),
        );
        const r = await project.driver.up({ refresh: false, target, targetDependents: true });
        assert.deepEqual(
            r.proxies!.map((m) => m.id),
            ["web-0", "web-1", "web-2", "web-3", "web-4"],
        );
        assert.deepEqual(await names(DEPLOYMENTS), ["web-0", "web-1", "web-2", "web-3", "web-4"]);
        project.driver.setPoolCounts({});
        await project.driver.destroy();
        assert.deepEqual(await names(DEPLOYMENTS), []);
        assert.deepEqual(await names(SECRETS), []);
    },
);
