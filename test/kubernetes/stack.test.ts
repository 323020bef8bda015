/**
 * The kubernetes kind on a real API server (kube-apiserver + etcd + controller-manager + scheduler + kwok,
 * test/helpers/kube-cluster.ts) with the real pulumi-resource-kubernetes plugin: `up` of a 3-member pool
 * creates exactly the documented Deployments, Services and Secret and waits for their rollout (kwok marks
 * the pods Ready: no container runs), scaling 3 → 1 removes the highest members, `egress gc`'s collector
 * finds and removes a labelled Deployment made by hand, and destroy leaves the namespace empty.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { tempProject } from "../helpers/project";

import { defaultSquidConf } from "../../components/kubernetes/squid-config";
import { kubernetesCollector } from "../../components/kubernetes/gc";
import { MEMBER_TEMPLATE_KEY } from "../../components/kubernetes/member-manifest";
import type { KubernetesProviderConfig } from "../../components/kubernetes/config";
import { parseEgressConfig } from "../../src/config";
import { waitFor } from "../helpers/harness";

const NS = "proxies";
const STACK = "k8s";
let cluster: KubeCluster;
let project: ReturnType<typeof tempProject>;

const config = (replicas: number) => ({
    "egress:providers": {
        k8s: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: NS },
    },
    "egress:pools": [{ name: "web", provider: "k8s", replicas, maxReplicas: 3, members: [{ index: 1, port: 8080 }] }],
});
const stackSel = `egress-project=egress,egress-stack=${STACK}`;
const list = async (collection: string, selector = stackSel) => {
    const r = await cluster.api("GET", `${collection}?labelSelector=${encodeURIComponent(selector)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body.items as any[]).sort((a, b) =>
        (a.metadata.labels?.["egress-member"] ?? "").localeCompare(b.metadata.labels?.["egress-member"] ?? ""),
    );
};
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;
const SERVICES = `/api/v1/namespaces/${NS}/services`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;
const CONFIGMAPS = `/api/v1/namespaces/${NS}/configmaps`;
const PODS = `/api/v1/namespaces/${NS}/pods`;
const REPLICASETS = `/apis/apps/v1/namespaces/${NS}/replicasets`;
const memberOf = (o: any) => o.metadata.labels["egress-member"];

before(async () => {
    cluster = startKubeCluster();
    await cluster.createNamespace(NS);
    project = tempProject(STACK, config(3));
});
after(async () => {
    await project?.driver.destroy().catch(() => undefined);
    project?.cleanup();
    cluster?.stop();
});

test(
    "up creates each member's Deployment, Service and the pool's Secret as documented, and waits for the rollout",
    { timeout: 300_000 },
    async (t) => {
        const started = Date.now();
        const res = await project.driver.up();
        t.diagnostic(`up of 3 members: ${Date.now() - started} ms; cluster start ${cluster.startMs} ms`);
        assert.ok(res.changes.create >= 7, JSON.stringify(res.changes)); // provider, secret, 3 × (deployment, service)
        const proxies = await project.driver.proxies();
        assert.deepEqual(
            proxies.map((p) => [p.id, p.kind, p.port]),
            [
                ["web-0", "kubernetes", 3128],
                ["web-1", "kubernetes", 8080],
                ["web-2", "kubernetes", 3128],
            ],
        );

        const installation = (await project.driver.installation()).installation.id;
        const [secret] = await list(SECRETS);
        assert.deepEqual(secret.metadata.labels, {
            "egress-project": "egress",
            "egress-stack": STACK,
            "egress-installation": installation,
            "egress-pool": "web",
        });
        const data = Object.fromEntries(
            Object.entries(secret.data as Record<string, string>).map(([k, v]) => [
                k,
                Buffer.from(v, "base64").toString(),
            ]),
        );
        assert.deepEqual(data, { "squid.conf": defaultSquidConf(3128), "member-1.squid.conf": defaultSquidConf(8080) });
        // What the pool's members share, kept once (the member resources keep their own part in state).
        const [members] = await list(CONFIGMAPS);
        assert.deepEqual(members.metadata.labels, secret.metadata.labels);
        assert.equal(JSON.parse(members.data[MEMBER_TEMPLATE_KEY]).secret, secret.metadata.name);

        const deployments = await list(DEPLOYMENTS);
        const services = await list(SERVICES);
        assert.deepEqual(deployments.map(memberOf), ["web-0", "web-1", "web-2"]);
        assert.deepEqual(services.map(memberOf), ["web-0", "web-1", "web-2"]);
        const poolSel = {
            matchLabels: {
                "egress-project": "egress",
                "egress-stack": STACK,
                "egress-installation": installation,
                "egress-pool": "web",
            },
        };
        for (const [i, d] of deployments.entries()) {
            const port = i === 1 ? 8080 : 3128;
            const labels = { ...poolSel.matchLabels, "egress-member": `web-${i}` };
            assert.deepEqual(d.metadata.labels, labels);
            assert.equal(d.spec.replicas, 1);
            assert.deepEqual(d.spec.selector, { matchLabels: labels });
            assert.deepEqual(d.spec.strategy, {
                type: "RollingUpdate",
                rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
            });
            const tpl = d.spec.template;
            assert.deepEqual(tpl.metadata.labels, labels);
            assert.match(tpl.metadata.annotations["egress.dev/config-sha256"], /^[0-9a-f]{64}$/);
            const spec = tpl.spec;
            assert.deepEqual(spec.topologySpreadConstraints, [
                {
                    maxSkew: 1,
                    topologyKey: "kubernetes.io/hostname",
                    whenUnsatisfiable: "ScheduleAnyway",
                    labelSelector: poolSel,
                },
            ]);
            assert.deepEqual(spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution, [
                { weight: 100, podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: poolSel } },
            ]);
            const [c] = spec.containers;
            assert.equal(c.image, "ubuntu/squid:latest");
            assert.deepEqual(c.ports, [{ name: "proxy", containerPort: port, protocol: "TCP" }]);
            assert.deepEqual(c.readinessProbe, {
                tcpSocket: { port },
                initialDelaySeconds: 2,
                periodSeconds: 5,
                failureThreshold: 3,
                timeoutSeconds: 1,
                successThreshold: 1,
            });
            assert.deepEqual(c.livenessProbe.tcpSocket, { port });
            assert.deepEqual(c.resources, {
                requests: { cpu: "50m", memory: "64Mi" },
                limits: { cpu: "500m", memory: "256Mi" },
            });
            assert.deepEqual(c.volumeMounts, [
                { name: "config", mountPath: "/etc/squid/squid.conf", subPath: "squid.conf", readOnly: true },
            ]);
            assert.deepEqual(spec.volumes[0].secret.secretName, secret.metadata.name);
            assert.deepEqual(spec.volumes[0].secret.items, [
                { key: i === 1 ? "member-1.squid.conf" : "squid.conf", path: "squid.conf" },
            ]);
            // The provider waited for the rollout: kwok's simulated node ran the pod to Ready.
            assert.equal(d.status.availableReplicas, 1, `web-${i} rolled out: ${JSON.stringify(d.status)}`);

            const s = services[i];
            assert.deepEqual(s.metadata.labels, labels);
            assert.equal(s.spec.type, "ClusterIP");
            assert.deepEqual(s.spec.selector, labels);
            assert.deepEqual(s.spec.ports, [{ name: "proxy", port, targetPort: port, protocol: "TCP" }]);
            assert.equal(proxies[i].host, `${s.metadata.name}.${NS}.svc.cluster.local`);
        }
        assert.equal(
            deployments[0].spec.template.metadata.annotations["egress.dev/config-sha256"],
            deployments[2].spec.template.metadata.annotations["egress.dev/config-sha256"],
        );
        assert.notEqual(
            deployments[0].spec.template.metadata.annotations["egress.dev/config-sha256"],
            deployments[1].spec.template.metadata.annotations["egress.dev/config-sha256"],
        );
        const pods = await list(PODS);
        assert.deepEqual(
            pods.map((p) => [memberOf(p), p.spec.nodeName, p.status.phase]),
            [0, 1, 2].map((i) => [`web-${i}`, "kwok-node-0", "Running"]),
        );
    },
);

test("scale 3 → 1 removes the highest members and their Secret key", { timeout: 300_000 }, async () => {
    project.writeConfig(config(1));
    await project.driver.up();
    assert.deepEqual(
        (await project.driver.proxies()).map((p) => p.id),
        ["web-0"],
    );
    assert.deepEqual((await list(DEPLOYMENTS)).map(memberOf), ["web-0"]);
    assert.deepEqual((await list(SERVICES)).map(memberOf), ["web-0"]);
    const [secret] = await list(SECRETS);
    assert.deepEqual(Object.keys(secret.data), ["squid.conf"]);
    // The garbage collector removes the removed members' ReplicaSets and pods (kwok finishes the pods' deletion).
    await waitFor(
        "only web-0's pod left",
        async () => {
            const pods = await list(PODS);
            return pods.length === 1 && memberOf(pods[0]) === "web-0";
        },
        60_000,
        250,
    );
});

test(
    "gc's collector finds a labelled Deployment made by hand and removes it; a user without RBAC rights gets `rbac`",
    { timeout: 120_000 },
    async () => {
        const labels = {
            "egress-project": "egress",
            "egress-stack": STACK,
            "egress-installation": (await project.driver.installation()).installation.id,
            "egress-pool": "web",
            "egress-member": "web-7",
        };
        const made = await cluster.api("POST", DEPLOYMENTS, {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "left-behind", labels },
            spec: {
                replicas: 1,
                selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: { containers: [{ name: "squid", image: "ubuntu/squid:latest" }] },
                },
            },
        });
        assert.equal(made.status, 201, JSON.stringify(made.body));
        const entry = parseEgressConfig({ providers: { k8s: config(1)["egress:providers"].k8s } }, "/").providers
            .k8s as KubernetesProviderConfig;
        const collector = kubernetesCollector("k8s", entry, { env: {} });
        const found = await collector.list({
            project: "egress",
            stack: STACK,
            installation: (await project.driver.installation()).installation.id,
        });
        assert.deepEqual(
            found
                .filter((t) => t.type === "deployment")
                .map((t) => [t.name.startsWith("web-0-") ? "web-0-*" : t.name, t.member, t.location])
                .sort(),
            [
                ["left-behind", "web-7", NS],
                ["web-0-*", "web-0", NS],
            ],
        );
        assert.deepEqual(found.map((t) => t.type).sort(), [
            "configmap",
            "deployment",
            "deployment",
            "secret",
            "service",
        ]);
        assert.equal(
            (
                await collector.list({
                    project: "egress",
                    stack: "other",
                    installation: (await project.driver.installation()).installation.id,
                })
            ).length,
            0,
        );

        const stray = found.find((t) => t.name === "left-behind")!;
        await collector.remove(stray);
        await collector.remove(stray); // already gone (404): still fine
        assert.equal((await cluster.api("GET", `${DEPLOYMENTS}/left-behind`)).status, 404);
        await waitFor(
            "the stray Deployment's pods collected",
            async () => (await list(PODS, "egress-member=web-7")).length === 0,
            60_000,
            250,
        );

        const nobody = { ...entry, context: "nobody" };
        await assert.rejects(
            kubernetesCollector("k8s", nobody, { env: {} }).list({
                project: "egress",
                stack: STACK,
                installation: "0a1b2c3d",
            }),
            {
                name: "KubeApiError",
                stage: "rbac",
                message:
                    /HTTP 403: deployments.apps is forbidden: User "egress-nobody" cannot list resource "deployments"/,
            },
        );
    },
);

test("destroy leaves nothing of the stack in the namespace", { timeout: 300_000 }, async () => {
    await project.driver.destroy();
    for (const c of [DEPLOYMENTS, SERVICES, SECRETS, CONFIGMAPS, REPLICASETS])
        assert.deepEqual(await list(c, "egress-project=egress"), [], c);
    await waitFor("no pods left", async () => (await list(PODS, "egress-project=egress")).length === 0, 60_000, 250);
    // Nothing else either: only what the cluster itself puts in every namespace remains.
    for (const c of [DEPLOYMENTS, SERVICES, SECRETS, REPLICASETS, PODS]) {
        const all = await cluster.api("GET", c);
        assert.deepEqual(
            all.body.items.map((o: any) => o.metadata.name),
            [],
            c,
        );
    }
});
