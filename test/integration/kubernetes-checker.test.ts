/**
 * The kubernetes checker against a local stand-in of the API server, for what a real one cannot be made
 * to do on cue: the exact request, 5xx, hangs, refused connections, retries, exec plugin runs per round.
 * Its stages against a real API server (401, a missing namespace, RBAC 403, exec plugins) are in
 * test/kubernetes/checks.test.ts.
 */
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { FakeApiServer, startFakeApiServer, writeKubeconfig } from "../fixtures/kubernetes/fake-apiserver";
import { kubernetesChecker } from "../../components/kubernetes/health";
import { parseEgressConfig } from "../../src/config";
import type { KubernetesProviderConfig } from "../../components/kubernetes/config";

let fake: FakeApiServer;
let kubeconfig: string;
const entry = (over: Record<string, unknown> = {}) =>
    parseEgressConfig(
        { providers: { k8s: { type: "kubernetes", kubeconfigPath: kubeconfig, context: "test", ...over } } },
        "/",
    ).providers.k8s as KubernetesProviderConfig;
/** Transient failures are tried twice, 10 ms apart, so failing cases stay fast. */
const retry = { tries: 2, firstDelayMs: 10, maxDelayMs: 10, maxTotalMs: 5000 };
const check = (over: Record<string, unknown> = {}, opts: Record<string, unknown> = {}) =>
    kubernetesChecker("k8s", entry(over), { env: {}, timeoutMs: 2000, retry, ...opts }).check();

before(async () => {
    fake = await startFakeApiServer();
    kubeconfig = writeKubeconfig(fake.url);
});
after(() => fake.close());

describe("kubernetes checker", () => {
    it("checks /version, then asks for at most one managed pod in the namespace", async () => {
        fake.objects.set("/api/v1/namespaces/egress/pods", [
            { metadata: { name: "web-0-abc", labels: { "egress-project": "egress" } } },
            { metadata: { name: "web-1-def", labels: { "egress-project": "egress" } } },
        ]);
        const [v] = await check();
        assert.equal(v.ok, true, v.message);
        assert.equal(v.target, "namespace/egress");
        assert.deepEqual(v.details, { context: "test", serverVersion: "v1.31.2", managedPodsSeen: 1 });
        const list = fake.requests.find((r) => r.path === "/api/v1/namespaces/egress/pods")!;
        assert.equal(list.query.get("limit"), "1");
        assert.equal(list.query.get("labelSelector"), "egress-project=egress");
        assert.equal(list.auth, "Bearer k8s-test-token");
    });

    it("reports 5xx, timeouts and refused connections at stage `api`", async () => {
        fake.fail = [{ match: /\/pods$/, status: 500 }];
        const [err] = await check();
        assert.deepEqual([err.ok, err.stage], [false, "api"]);
        assert.match(
            err.message,
            /\[transient\] GET \/api\/v1\/namespaces\/[a-z-]+\/pods: HTTP 500: Internal error occurred.* \(gave up after 2 tries in /,
        );
        fake.fail = [{ match: /^\/version$/, status: "hang" }];
        const [slow] = await check({}, { timeoutMs: 250 });
        assert.deepEqual([slow.stage, /timed out after 250ms/.test(slow.message)], ["api", true]);
        fake.fail = [];
        const [refused] = await check({}, { endpoint: "http://127.0.0.1:9" });
        assert.equal(refused.stage, "api");
        assert.match(refused.message, /ECONNREFUSED/);
    });

    it("names the entry field when the kubeconfig context does not exist", async () => {
        const [v] = await check({ context: "prod" });
        assert.deepEqual([v.ok, v.stage], [false, "kubeconfig"]);
        assert.equal(
            v.message,
            `provider \`k8s\` (egress:providers.k8s.context): context \`prod\` is not in ${kubeconfig} (known: test, stale)`,
        );
        const [missing] = await check({ kubeconfigPath: "/nonexistent/kubeconfig" });
        assert.equal(
            missing.message,
            "provider `k8s` (egress:providers.k8s.kubeconfigPath): kubeconfig /nonexistent/kubeconfig does not exist",
        );
    });

    it("runs the exec plugin once per round, not once per request", async () => {
        const fs = await import("node:fs");
        const path = await import("node:path");
        const dir = path.dirname(kubeconfig);
        const runs = path.join(dir, "plugin-runs");
        const plugin = path.join(dir, "counting-plugin.js");
        fs.writeFileSync(
            plugin,
            `require("fs").appendFileSync(${JSON.stringify(runs)}, "x");process.stdout.write(JSON.stringify({kind:"ExecCredential",apiVersion:"client.authentication.k8s.io/v1",status:{token:"k8s-test-token"}}))`,
        );
        const file = path.join(dir, "counting-config");
        fs.writeFileSync(
            file,
            `apiVersion: v1\nclusters: [{name: c, cluster: {server: "${fake.url}"}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: "${process.execPath}", args: ["${plugin}"]}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
        );
        const checker = kubernetesChecker("k8s", entry({ kubeconfigPath: file, context: undefined }), {
            env: {},
            timeoutMs: 2000,
        });
        const [v] = await checker.check();
        assert.equal(v.ok, true, v.message);
        // Two requests (/version, then the pod list), one plugin run.
        assert.equal(fs.readFileSync(runs, "utf8"), "x");
        await checker.check();
        assert.equal(fs.readFileSync(runs, "utf8"), "xx");
    });
});
