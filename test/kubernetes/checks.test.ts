/**
 * The kubernetes provider-health checker's stages against a real API server: answers, a token the server
 * does not know (`credentials`), a namespace that does not exist (`namespace`: listing pods there would
 * answer 200 with nothing), a user without RBAC rights (`rbac`), and exec credential plugins. What a real
 * server cannot be made to do on cue (5xx, hangs, retries) stays with the local stand-in in
 * test/integration/kubernetes-checker.test.ts.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { kubernetesChecker } from "../../components/kubernetes/health";
import type { KubernetesProviderConfig } from "../../components/kubernetes/config";
import { parseEgressConfig } from "../../src/config";

let cluster: KubeCluster;
const entry = (over: Record<string, unknown> = {}) =>
    parseEgressConfig(
        { providers: { k8s: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", ...over } } },
        "/",
    ).providers.k8s as KubernetesProviderConfig;
const retry = { tries: 2, firstDelayMs: 10, maxDelayMs: 10, maxTotalMs: 5000 };
const check = (over: Record<string, unknown> = {}) =>
    kubernetesChecker("k8s", entry(over), { env: {}, timeoutMs: 10_000, retry }).check();

before(async () => {
    cluster = startKubeCluster();
    await cluster.createNamespace("egress");
});
after(() => cluster?.stop());

describe("kubernetes checker on a real API server", () => {
    it("passes with the admin's token, naming the server's version", async () => {
        const [v] = await check();
        assert.equal(v.ok, true, v.message);
        assert.equal(v.target, "namespace/egress");
        assert.deepEqual(v.details, { context: "admin", serverVersion: "v1.34.2", managedPodsSeen: 0 });
        assert.match(
            v.message,
            /^provider `k8s`: context admin, https:\/\/127\.0\.0\.1:\d+ answers and pods in namespace egress can be listed$/,
        );
    });

    it("a token the server does not know: stage `credentials`, the token not in the message", async () => {
        const [v] = await check({ kubeconfigPath: cluster.kubeconfigWithToken("not-a-token-the-server-knows") });
        assert.deepEqual([v.ok, v.stage], [false, "credentials"]);
        assert.match(
            v.message,
            /the API server did not answer \/version; the credentials were rejected \(401\).*HTTP 401: Unauthorized/,
        );
        assert.doesNotMatch(v.message, /not-a-token/);
    });

    it("a namespace that does not exist: stage `namespace`", async () => {
        const [v] = await check({ namespace: "nowhere" });
        assert.deepEqual([v.ok, v.stage, v.target], [false, "namespace", "namespace/nowhere"]);
        assert.match(v.message, /namespace nowhere does not exist; create it \(kubectl create namespace nowhere\)/);
    });

    it("a user the server knows but RBAC grants nothing: stage `rbac` with the server's reason", async () => {
        const [v] = await check({ context: "nobody" });
        assert.deepEqual([v.ok, v.stage], [false, "rbac"]);
        assert.match(v.message, /cannot list pods in namespace egress; forbidden \(403\): grant the user a Role/);
        assert.match(
            v.message,
            /User "egress-nobody" cannot list resource "pods" in API group "" in the namespace "egress"/,
        );
    });

    it("a Role granting just list on pods is enough, though the namespace itself is not readable", async () => {
        const rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/egress";
        const role = await cluster.api("POST", `${rbac}/roles`, {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "Role",
            metadata: { name: "list-pods" },
            rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["list"] }],
        });
        assert.equal(role.status, 201, JSON.stringify(role.body));
        const binding = await cluster.api("POST", `${rbac}/rolebindings`, {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
            metadata: { name: "nobody-lists-pods" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "list-pods" },
            subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "egress-nobody" }],
        });
        assert.equal(binding.status, 201, JSON.stringify(binding.body));
        try {
            // RBAC bindings apply at once on a real server; no cache to wait for.
            const [v] = await check({ context: "nobody" });
            assert.equal(v.ok, true, v.message);
        } finally {
            await cluster.api("DELETE", `${rbac}/rolebindings/nobody-lists-pods`);
            await cluster.api("DELETE", `${rbac}/roles/list-pods`);
        }
    });

    it("runs exec credential plugins (argv, no shell) and uses their token", async () => {
        const plugin = path.join(cluster.dir, "plugin.js");
        fs.writeFileSync(
            plugin,
            `process.stdout.write(JSON.stringify({kind:"ExecCredential",apiVersion:"client.authentication.k8s.io/v1",status:{token:process.env.TOK}}))`,
        );
        const file = path.join(cluster.dir, "exec-config");
        const ca = fs.readFileSync(path.join(cluster.dir, "pki", "serving.crt")).toString("base64");
        fs.writeFileSync(
            file,
            `apiVersion: v1\nclusters: [{name: c, cluster: {server: "${cluster.server}", certificate-authority-data: "${ca}"}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: "${process.execPath}", args: ["${plugin}"], env: [{name: TOK, value: "${cluster.adminToken}"}]}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
        );
        const [v] = await check({ kubeconfigPath: file, context: undefined });
        assert.equal(v.ok, true, v.message);
        assert.equal(v.details?.context, "x");
    });
});
