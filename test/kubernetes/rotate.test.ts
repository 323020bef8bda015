/**
 * Rotation by age of the kubernetes kind on a real API server: `egress serve` (in-process, real engine,
 * real pulumi-resource-kubernetes) runs a pool of 2 with `rotateAfterSeconds` below the floor (through
 * EGRESS_TEST_MIN_ROTATE_SECONDS) and a short rotate interval. Every original member is replaced by a new
 * Deployment (new uid, new pods) through a `rotate` operation that succeeds, the pool never has fewer
 * than 2 healthy members at a 250 ms sample, and afterwards the cluster holds exactly the Deployments
 * of the members the stack outputs list — no surge Deployment left behind.
 *
 * No pod runs squid (kwok has no kubelet), so a proxy-chain server on loopback stands in for every pod's
 * squid, and cluster DNS stands in for kube-proxy (test/helpers/kube-dns.ts): a member's Service name
 * resolves to that loopback address only while the Service selects a Running, Ready pod. A member is
 * thus healthy exactly while its pod runs, which is what rotation's capacity guarantee is about.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { clusterNamesToLoopback } from "../helpers/kube-dns";
import { samplePool, startTestService, TestService, TOKENS } from "../helpers/service";
import { lowerRotateFloor, rotationReads } from "../helpers/rotation";
import { waitFor } from "../helpers/harness";
const { Server: ProxyServer } = require("proxy-chain") as typeof import("proxy-chain");

const NS = "rotate";
const PERIOD_S = 40;
const POD_ADDRESS = "127.0.0.2";
let cluster: KubeCluster;
let svc: TestService;
let squid: InstanceType<typeof ProxyServer>;
let restoreLookup: (() => void) | undefined;
let restoreFloor: (() => void) | undefined;

const STACK_SEL = encodeURIComponent("egress-stack=svc");
const deployments = async () =>
    (await cluster.api("GET", `/apis/apps/v1/namespaces/${NS}/deployments?labelSelector=${STACK_SEL}`)).body
        .items as any[];
const pods = async () =>
    (await cluster.api("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=${STACK_SEL}`)).body.items as any[];
const memberOf = (o: any) => o.metadata.labels["egress-member"] as string;
const operations = async () =>
    (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as any[];

/** kube-proxy's part: does Service `name` select a Running, Ready pod that is not being deleted? */
async function serves(name: string, namespace: string): Promise<boolean> {
    const s = await cluster.api("GET", `/api/v1/namespaces/${namespace}/services/${name}`);
    if (s.status !== 200) return false;
    const sel = Object.entries(s.body.spec?.selector ?? {}).map(([k, v]) => `${k}=${v}`);
    if (!sel.length) return false;
    const r = await cluster.api(
        "GET",
        `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(sel.join(","))}`,
    );
    return (r.body.items as any[]).some(
        (p) =>
            p.status?.phase === "Running" &&
            !p.metadata.deletionTimestamp &&
            (p.status.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True"),
    );
}

/** What the service and the cluster said, for a failure message: the reason is then in the failure itself. */
async function explain(e: Error): Promise<never> {
    const ops = await operations().catch((x) => `(${x.message})`);
    const deps = (await deployments().catch(() => [])).map((d) => [
        d.metadata.name,
        memberOf(d),
        d.metadata.uid,
        d.metadata.creationTimestamp,
        d.metadata.deletionTimestamp,
    ]);
    const podView = (await pods().catch(() => [])).map((p) => [p.metadata.name, memberOf(p), p.status?.phase]);
    const pool = await rotationReads(svc)
        .pool("web")
        .catch(() => undefined);
    throw new Error(
        `${e.message}; pool: ${JSON.stringify(pool)}; operations: ${JSON.stringify(ops)}; deployments: ${JSON.stringify(deps)}; pods: ${JSON.stringify(podView)}`,
    );
}

before(async () => {
    restoreFloor = lowerRotateFloor(5);
    squid = new ProxyServer({ port: 0, host: POD_ADDRESS, verbose: false });
    await squid.listen();
    restoreLookup = clusterNamesToLoopback({ address: POD_ADDRESS, serves });
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
                    maxReplicas: 3,
                    port: squid.port,
                    rotateAfterSeconds: PERIOD_S,
                },
            ],
        },
        { probeIntervalMs: 500, providerCheckIntervalMs: 1000, rotateIntervalMs: 500 },
    );
    // The start-up converge must end before anything is judged: its `up` waits for each Deployment's rollout.
    const converge = await waitFor(
        "the converge operation to settle",
        async () => {
            const [op] = await operations();
            return op && !["queued", "running"].includes(op.status) ? op : undefined;
        },
        240_000,
        250,
    ).catch(explain);
    assert.equal(converge.status, "succeeded", JSON.stringify(converge));
    await waitFor(
        "2 healthy members",
        async () => (await rotationReads(svc).pool("web")).healthy === 2,
        60_000,
        250,
    ).catch(explain);
});
after(async () => {
    await svc?.close(); // destroys the stack
    const left = cluster ? await deployments().catch(() => []) : [];
    cluster?.stop();
    await squid?.close(true);
    restoreLookup?.();
    restoreFloor?.();
    assert.deepEqual(
        left.map((d) => d.metadata.name),
        [],
        "the destroy removed every Deployment",
    );
});

test(
    "rotateAfterSeconds 40 on a pool of 2: each pod member replaced by a new Deployment, healthy ≥ 2 throughout, no surge Deployment left",
    { timeout: 600_000 },
    async (t) => {
        const original = new Map((await deployments()).map((d) => [memberOf(d), d]));
        assert.deepEqual([...original.keys()].sort(), ["web-0", "web-1"]);
        const originalUrls = new Map((await svc.project.driver.proxies()).map((p) => [p.id, p.url]));
        const originalPods = new Set((await pods()).map((p) => p.metadata.uid));
        assert.equal((await rotationReads(svc).pool("web")).rotation.rotateAfterSeconds, PERIOD_S);

        const started = Date.now();
        const sampler = samplePool(svc, "web", {
            check: (p) => assert.equal(p.desired, 2, "a rotation's surge is not a new desired count"),
        });
        let healthy: number[] = [];
        let sizes: number[] = [];
        let done: Map<string, any>;
        try {
            // Both originals replaced, by rotate operations that succeeded (one, or one each); a failed one ends the wait.
            const outcome = await waitFor(
                "both original members rotated",
                async () => {
                    const ops = await rotationReads(svc).rotateOps();
                    const failed = ops.find((o) => ["failed", "interrupted"].includes(o.status));
                    if (failed) return { failed };
                    const first = new Map<string, any>();
                    for (const o of ops.filter((o) => o.status === "succeeded"))
                        for (const r of o.rotations as any[])
                            if (r.replacedAt && !first.has(r.member)) first.set(r.member, { ...r, op: o.id });
                    return first.has("web-0") && first.has("web-1") && { first };
                },
                3 * PERIOD_S * 1000 + 240_000,
                250,
            ).catch(explain);
            if ("failed" in outcome) await explain(new Error(`a rotation did not succeed: ${outcome.failed.error}`));
            done = (outcome as { first: Map<string, any> }).first;
        } finally {
            ({ healthy, actual: sizes } = await sampler.stop());
        }
        t.diagnostic(`rotated both members in ${Date.now() - started} ms; ${healthy.length} samples`);
        assert.deepEqual(
            (await rotationReads(svc).rotateOps()).filter((o) => o.status === "failed"),
            [],
            "no rotation failed",
        );
        assert.ok(healthy.length > 40, `sampled ${healthy.length} times`);
        assert.ok(Math.min(...healthy) >= 2, `healthy never below 2: ${healthy.join(" ")}`);
        assert.ok(Math.max(...sizes) <= 3, `at most replicas + maxSurge members: ${sizes.join(" ")}`);
        for (const [id, r] of done) {
            assert.match(r.surge, /^web-2$/, `${id}'s surge member`);
            assert.equal(r.reason, "age");
        }

        // One consistent view with no operation under way: the replacements come due PERIOD_S after their
        // creation, so a new rotation may begin; a view taken across one is read again.
        const view = await waitFor(
            "a view of the pool with no operation under way",
            async () => {
                const before = await operations();
                if (before.some((o) => ["queued", "running"].includes(o.status))) return undefined;
                const v = {
                    outputs: (await svc.project.driver.proxies()).filter((p) => p.pool === "web"),
                    listed: (await svc.call("GET", "/v1/proxies?pool=web", { token: TOKENS.discover })).body
                        .proxies as any[],
                    deployments: (await deployments()).filter((d) => !d.metadata.deletionTimestamp),
                    services: (
                        (await cluster.api("GET", `/api/v1/namespaces/${NS}/services?labelSelector=${STACK_SEL}`)).body
                            .items as any[]
                    ).filter((s) => !s.metadata.deletionTimestamp),
                };
                const afterOps = await operations();
                return afterOps.length === before.length &&
                    afterOps.every((o) => !["queued", "running"].includes(o.status))
                    ? v
                    : undefined;
            },
            180_000,
            250,
        ).catch(explain);
        const { outputs, listed } = view;
        assert.deepEqual(
            listed.map((p) => `${p.id} ${p.url}`).sort(),
            outputs.map((p) => `${p.id} ${p.url}`).sort(),
            "GET /v1/proxies lists the stack outputs",
        );
        assert.deepEqual(outputs.map((p) => p.id).sort(), ["web-0", "web-1"]);
        // The replacement's Service is a new object with a new name, so the member's host changes too.
        for (const p of outputs) assert.notEqual(p.url, originalUrls.get(p.id), `${p.id} has a new URL`);

        // The cluster holds exactly those members' Deployments, each new; their pods are new too.
        const now = view.deployments;
        assert.deepEqual(
            now.map(memberOf).sort(),
            ["web-0", "web-1"],
            `one Deployment per member, no surge Deployment: ${JSON.stringify(now.map((d) => d.metadata.name))}`,
        );
        for (const d of now) {
            const old = original.get(memberOf(d))!;
            assert.notEqual(d.metadata.uid, old.metadata.uid, `${memberOf(d)} has a new Deployment`);
            assert.notEqual(d.metadata.name, old.metadata.name, `${memberOf(d)}'s Deployment has a new name`);
            assert.ok(
                Date.parse(d.metadata.creationTimestamp) > Date.parse(old.metadata.creationTimestamp),
                `${memberOf(d)}'s Deployment is younger: ${d.metadata.creationTimestamp} vs ${old.metadata.creationTimestamp}`,
            );
        }
        const hosts = outputs.map((p) => p.host.split(".")[0]).sort();
        assert.deepEqual(
            view.services.map((s) => s.metadata.name).sort(),
            hosts,
            "the Services are the ones the outputs name",
        );
        // Each member's pod now is a new one (whatever runs for web-0 and web-1, none is an original pod).
        const running = await waitFor(
            "web-0 and web-1 each with a running pod",
            async () => {
                const live = (await pods()).filter(
                    (p) =>
                        ["web-0", "web-1"].includes(memberOf(p)) &&
                        p.status?.phase === "Running" &&
                        !p.metadata.deletionTimestamp,
                );
                return new Set(live.map(memberOf)).size === 2 && live;
            },
            60_000,
            250,
        ).catch(explain);
        for (const p of running) assert.ok(!originalPods.has(p.metadata.uid), `${p.metadata.name} is a new pod`);
    },
);
