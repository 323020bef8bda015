/**
 * Self-healing of the kubernetes kind on a real API server: `egress serve` (in-process, real engine, real
 * pulumi-resource-kubernetes) converges a 2-member pool; a member's Deployment deleted behind its back is
 * seen as gone by the kind's liveness hook (components/kubernetes/gone.ts: no Pending/Running pod
 * with its label) and a heal operation brings it back with a new Deployment whose pod kwok runs to Ready.
 *
 * No pod runs squid (no kubelet), so members never pass health probes; the pool replaces only gone members
 * (replaceUnhealthyAfterSeconds 0). The probes would resolve `<service>.<ns>.svc.cluster.local`: this
 * process resolves those names to 127.0.0.2 so no DNS query or probe leaves loopback.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { startTestService, TestService, TOKENS } from "../helpers/service";
import { clusterNamesToLoopback } from "../helpers/kube-dns";
import { waitFor } from "../helpers/harness";

const NS = "heal";
let cluster: KubeCluster;
let svc: TestService;

let restoreLookup: (() => void) | undefined;

const memberSel = (m: string) => encodeURIComponent(`egress-stack=svc,egress-member=${m}`);
const deploymentsOf = async (m: string) =>
    (await cluster.api("GET", `/apis/apps/v1/namespaces/${NS}/deployments?labelSelector=${memberSel(m)}`)).body
        .items as any[];
const runningPodsOf = async (m: string) =>
    (
        (await cluster.api("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=${memberSel(m)}`)).body.items as any[]
    ).filter((p) => p.status.phase === "Running" && !p.metadata.deletionTimestamp);
const healOps = async () =>
    ((await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[]).filter(
        (o) => o.kind === "heal",
    );

before(async () => {
    restoreLookup = clusterNamesToLoopback();
    cluster = startKubeCluster();
    await cluster.createNamespace(NS);
    svc = await startTestService(
        {
            "egress:providers": {
                k8s: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: NS },
            },
            "egress:pools": [
                {
                    name: "web",
                    provider: "k8s",
                    replicas: 2,
                    maxReplicas: 2,
                    replaceUnhealthyAfterSeconds: 0,
                    maxSurge: 1,
                },
            ],
        },
        {
            probeIntervalMs: 1000,
            reconcileIntervalMs: 500,
            providerCheckIntervalMs: 1000,
            healBackoff: { baseMs: 2000, maxMs: 4000 },
        },
    );
    await waitFor(
        "both members' pods running after converge",
        async () => (await runningPodsOf("web-0")).length === 1 && (await runningPodsOf("web-1")).length === 1,
        240_000,
        250,
    );
    // And the converge itself ended: its `up` waits for each Deployment's rollout, so a Deployment deleted
    // while it still waits would hold that run (and the heal queued behind it) until the provider's await
    // times out — a different story from the one this test tells.
    const converge = await waitFor(
        "the converge operation to settle",
        async () => {
            const [op] = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[];
            return op && !["queued", "running"].includes(op.status) ? op : undefined;
        },
        240_000,
        250,
    );
    assert.equal(converge.status, "succeeded", JSON.stringify(converge));
});
after(async () => {
    await svc?.close(); // destroys the stack
    cluster?.stop();
    restoreLookup?.();
});

test(
    "a member's Deployment deleted behind egress's back is found gone and brought back",
    { timeout: 240_000 },
    async (t) => {
        const [old] = await deploymentsOf("web-1");
        assert.ok(old, "web-1 has a Deployment");
        const deletedAt = Date.now();
        const del = await cluster.api(
            "DELETE",
            `/apis/apps/v1/namespaces/${NS}/deployments/${old.metadata.name}?propagationPolicy=Background`,
        );
        assert.equal(del.status, 200, JSON.stringify(del.body));

        // On a timeout, what the service and the cluster said: the reason is then in the failure itself.
        const explain = async (e: Error) => {
            const heal = (await svc.call("GET", "/v1/heal", { token: TOKENS.scale })).body;
            const ops = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations;
            const pods = (await cluster.api("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=${memberSel("web-1")}`))
                .body.items;
            const podView = (pods as any[]).map((p) => [p.metadata.name, p.status.phase, p.metadata.deletionTimestamp]);
            throw new Error(
                `${e.message}; heal: ${JSON.stringify(heal)}; operations: ${JSON.stringify(ops)}; web-1 pods: ${JSON.stringify(podView)}`,
            );
        };
        const op = await waitFor(
            "a settled heal of web-1",
            async () =>
                (await healOps()).find(
                    (o) =>
                        o.members.includes("web-1") &&
                        Date.parse(o.createdAt) >= deletedAt &&
                        ["succeeded", "failed"].includes(o.status),
                ),
            180_000,
            250,
        ).catch(explain);
        assert.equal(op.status, "succeeded", op.error);
        assert.deepEqual(op.members, ["web-1"]);
        assert.equal(op.reasons["web-1"].reason, "gone");
        assert.match(op.reasons["web-1"].detail, /^no pod labelled egress-member=web-1 in namespace heal/);

        const [fresh] = await waitFor(
            "web-1's new Deployment",
            async () => {
                const d = await deploymentsOf("web-1");
                return d.length === 1 ? d : undefined;
            },
            30_000,
            250,
        );
        assert.notEqual(fresh.metadata.uid, old.metadata.uid, "a new Deployment");
        await waitFor("web-1's new pod running", async () => (await runningPodsOf("web-1")).length === 1, 60_000, 250);
        t.diagnostic(`delete → healed and running: ${Date.now() - deletedAt} ms`);
        // The other member was not touched.
        assert.equal((await healOps()).filter((o) => o.members.includes("web-0")).length, 0);
        const proxies = (await svc.call("GET", "/v1/proxies", { token: TOKENS.discover })).body.proxies as any[];
        assert.deepEqual(proxies.map((p) => p.id).sort(), ["web-0", "web-1"]);
    },
);
