import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { FakeApiServer, startFakeApiServer, writeKubeconfig } from "../fixtures/kubernetes/fake-apiserver";
import { kubernetesCollector } from "../../kinds/kubernetes/gc";
import { parseEgressConfig } from "../../src/config";
import type { KubernetesProviderConfig } from "../../kinds/kubernetes/config";

let fake: FakeApiServer;
let entry: KubernetesProviderConfig;
const L = (stack: string, member?: string) => ({ "egress-project": "egress", "egress-stack": stack, "egress-pool": "web", ...(member ? { "egress-member": member } : {}) });
const obj = (name: string, labels: Record<string, string>) => ({ metadata: { name, namespace: "egress", labels } });

before(async () => {
    fake = await startFakeApiServer();
    entry = parseEgressConfig({ providers: { k8s: { type: "kubernetes", kubeconfigPath: writeKubeconfig(fake.url), context: "test" } } }, "/").providers.k8s as KubernetesProviderConfig;
    fake.objects.set("/apis/apps/v1/namespaces/egress/deployments", [obj("web-0-a1", L("prod", "web-0")), obj("web-0-b2", L("staging", "web-0")), obj("other", { app: "x" })]);
    fake.objects.set("/api/v1/namespaces/egress/services", [obj("web-0-c3", L("prod", "web-0"))]);
    fake.objects.set("/api/v1/namespaces/egress/secrets", [obj("web-config-d4", L("prod"))]);
});
after(() => fake.close());

const collector = () => kubernetesCollector("k8s", entry, { env: {} });

describe("kubernetes collector", () => {
    it("lists this stack's deployments, services and secrets by label selector", async () => {
        const things = await collector().list({ project: "egress", stack: "prod" });
        assert.deepEqual(things.map((t) => [t.type, t.name, t.location, t.pool, t.member ?? null]), [
            ["deployment", "web-0-a1", "egress", "web", "web-0"],
            ["service", "web-0-c3", "egress", "web", "web-0"],
            ["secret", "web-config-d4", "egress", "web", null],
        ]);
        const req = fake.requests.find((r) => r.path.endsWith("/deployments"))!;
        assert.equal(req.query.get("labelSelector"), "egress-project=egress,egress-stack=prod");
    });

    it("removes things and succeeds when they are already gone", async () => {
        const c = collector();
        const things = await c.list({ project: "egress", stack: "prod" });
        for (const t of things) await c.remove(t);
        for (const t of things) await c.remove(t); // 404 now: still fine
        assert.deepEqual(await c.list({ project: "egress", stack: "prod" }), []);
        assert.deepEqual((await c.list({ project: "egress", stack: "staging" })).map((t) => t.name), ["web-0-b2"]);
        const del = fake.requests.find((r) => r.method === "DELETE")!;
        assert.equal(del.query.get("propagationPolicy"), "Background");
    });

    it("surfaces RBAC refusals with stage `rbac`", async () => {
        const locked = { ...entry, namespace: "locked" };
        await assert.rejects(kubernetesCollector("k8s", locked, { env: {} }).list({ project: "egress", stack: "prod" }), { name: "KubeApiError", stage: "rbac", message: /HTTP 403: deployments is forbidden/ });
    });
});
