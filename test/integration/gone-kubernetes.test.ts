import { after, before, beforeEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { FakeApiServer, startFakeApiServer, writeKubeconfig } from "../fixtures/kubernetes/fake-apiserver";
import { kubernetesGoneCheck } from "../../components/kubernetes/gone";
import { goneCheckFor } from "../../components/registry";
import { parseEgressConfig } from "../../src/config";
import type { KubernetesProviderConfig } from "../../components/kubernetes/config";
import { memberLabels, poolLabels, ProxyMember } from "../../src/model";
import { TEST_INSTALLATION } from "../helpers/installation";

const PODS = "/api/v1/namespaces/egress/pods";
let fake: FakeApiServer;
let kubeconfig: string;
const entry = (over: Record<string, unknown> = {}) =>
    parseEgressConfig(
        { providers: { k8s: { type: "kubernetes", kubeconfigPath: kubeconfig, context: "test", ...over } } },
        "/",
    ).providers.k8s as KubernetesProviderConfig;
const ctx = (over: Record<string, unknown> = {}) => ({
    runDir: "/nonexistent",
    project: "egress",
    stack: "dev",
    installation: TEST_INSTALLATION,
    entry: entry(over),
});
const check = (members: ProxyMember[], over: Record<string, unknown> = {}, opts: Record<string, unknown> = {}) =>
    kubernetesGoneCheck(ctx(over), { env: {}, timeoutMs: 2000, ...opts })(members);

const member = (index: number): ProxyMember => ({
    id: `web-${index}`,
    pool: "web",
    provider: "k8s",
    kind: "kubernetes",
    index,
    host: `web-${index}.egress.svc.cluster.local`,
    port: 3128,
    url: `http://web-${index}.egress.svc.cluster.local:3128`,
    zone: "test",
});

/** A pod of a member's Deployment as the ReplicaSet makes it: the member's labels, a generated name. */
let n = 0;
function pod(id: string, phase: string, extra: { reason?: string; stack?: string; installation?: string | null } = {}) {
    const labels = memberLabels(
        {
            project: "egress",
            stack: extra.stack ?? "dev",
            projectRoot: "/",
            stateDir: "/",
            installation: TEST_INSTALLATION,
        },
        "web",
        id,
    );
    // null: a pod of a stack made before installation ids (its template has no installation label).
    if (extra.installation === null) delete labels["egress-installation"];
    else if (extra.installation) labels["egress-installation"] = extra.installation;
    return {
        metadata: { name: `${id}-7d9f8c-${++n}`, namespace: "egress", labels },
        status: { phase, ...(extra.reason ? { reason: extra.reason } : {}) },
    };
}

before(async () => {
    fake = await startFakeApiServer();
    kubeconfig = writeKubeconfig(fake.url);
});
after(() => fake.close());
beforeEach(() => {
    fake.objects.clear();
    fake.requests.length = 0;
    fake.fail = [];
    fake.pageSize = undefined;
});

describe("kubernetes gone hook", () => {
    it("reports members without a Pending or Running pod, and nothing for the others", async () => {
        n = 0;
        fake.objects.set(PODS, [
            pod("web-0", "Running"),
            pod("web-1", "Failed", { reason: "Evicted" }),
            pod("web-3", "Pending"),
            // The evicted pod's replacement runs: not gone.
            pod("web-4", "Failed", { reason: "Evicted" }),
            pod("web-4", "Running"),
            pod("web-5", "Succeeded"),
            pod("web-6", "Unknown"),
            // Another stack's pod for the same member id does not keep web-2 alive.
            pod("web-2", "Running", { stack: "prod" }),
            // ...nor does another installation's pod of a same-named stack, nor an unmarked one (we are not legacy).
            pod("web-2", "Running", { installation: "89abcdef" }),
            pod("web-2", "Running", { installation: null }),
            // A pool-level object's labels (no egress-member) match no member.
            {
                metadata: {
                    name: "stray",
                    labels: poolLabels(
                        {
                            project: "egress",
                            stack: "dev",
                            projectRoot: "/",
                            stateDir: "/",
                            installation: TEST_INSTALLATION,
                        },
                        "web",
                    ),
                },
                status: { phase: "Running" },
            },
        ]);
        const gone = await check([0, 1, 2, 3, 4, 5, 6].map(member));
        assert.deepEqual(Object.fromEntries(gone), {
            "web-1":
                "no pod labelled egress-member=web-1 in namespace egress is Pending or Running (web-1-7d9f8c-2: Failed (Evicted))",
            "web-2": "no pod labelled egress-member=web-2 in namespace egress",
            "web-5":
                "no pod labelled egress-member=web-5 in namespace egress is Pending or Running (web-5-7d9f8c-6: Succeeded)",
            "web-6":
                "no pod labelled egress-member=web-6 in namespace egress is Pending or Running (web-6-7d9f8c-7: Unknown)",
        });
        // One list, by the stack's labels, in the entry's namespace.
        assert.deepEqual(
            fake.requests.map((r) => [r.method, r.path, r.query.get("labelSelector")]),
            [["GET", PODS, "egress-project=egress,egress-stack=dev"]],
        );
        assert.equal(fake.requests[0].auth, "Bearer k8s-test-token");
    });

    it("a stack made before installation ids owns its unmarked pods, never another installation's", async () => {
        fake.objects.set(PODS, [
            pod("web-0", "Running", { installation: null }),
            pod("web-1", "Running", { installation: "89abcdef" }),
        ]);
        const legacy = { ...ctx(), installation: { id: "0badc0de", legacy: true } };
        const gone = await kubernetesGoneCheck(legacy, { env: {}, timeoutMs: 2000 })([member(0), member(1)]);
        assert.deepEqual(Object.fromEntries(gone), {
            "web-1": "no pod labelled egress-member=web-1 in namespace egress",
        });
    });

    it("follows `continue`: pods on later pages count", async () => {
        fake.pageSize = 2;
        fake.objects.set(
            PODS,
            [0, 1, 2, 3, 4].map((i) => pod(`web-${i}`, "Running")),
        );
        const gone = await check([0, 1, 2, 3, 4, 5].map(member));
        assert.deepEqual(Object.fromEntries(gone), {
            "web-5": "no pod labelled egress-member=web-5 in namespace egress",
        });
        assert.deepEqual(
            fake.requests.map((r) => r.query.get("continue")),
            [null, "offset-2", "offset-4"],
        );
    });

    it("lists in the entry's namespace", async () => {
        fake.objects.set("/api/v1/namespaces/proxies/pods", [pod("web-0", "Running")]);
        fake.objects.set(PODS, [pod("web-1", "Running")]);
        const gone = await check([member(0), member(1)], { namespace: "proxies" });
        assert.deepEqual(Object.fromEntries(gone), {
            "web-1": "no pod labelled egress-member=web-1 in namespace proxies",
        });
    });

    it("API down, refusing or hung, or a kubeconfig that does not load: an empty map, no throw", async () => {
        const members = [member(0), member(1)]; // no pods at all: they would be gone if the list had answered
        fake.fail = [{ match: /\/pods$/, status: 500 }];
        assert.deepEqual(await check(members), new Map());
        fake.fail = [];
        assert.deepEqual(await check(members, {}, { endpoint: "http://127.0.0.1:9" }), new Map());
        assert.deepEqual(await check(members, { context: "stale" }), new Map());
        assert.deepEqual(await check(members, { namespace: "locked" }), new Map());
        assert.deepEqual(await check(members, { context: "prod" }), new Map());
        assert.deepEqual(await check(members, { kubeconfigPath: "/nonexistent/kubeconfig" }), new Map());
        fake.fail = [{ match: /\/pods$/, status: "hang" }];
        assert.deepEqual(await check(members, {}, { timeoutMs: 200 }), new Map());
        // The caller's signal ends a round too.
        assert.deepEqual(
            await kubernetesGoneCheck(ctx(), { env: {}, timeoutMs: 5000 })(members, AbortSignal.timeout(100)),
            new Map(),
        );
    });

    it("a later page that fails loses the whole answer: a partial list would call the members on the rest gone", async () => {
        fake.pageSize = 1;
        fake.objects.set(PODS, [pod("web-0", "Running"), pod("web-1", "Running")]);
        fake.fail = [{ match: /\/pods$/, query: (q) => q.has("continue"), status: 500 }];
        assert.deepEqual(await check([member(0), member(1)]), new Map());
        assert.deepEqual(
            fake.requests.map((r) => r.query.get("continue")),
            [null, "offset-1"],
        );
    });

    it("is the registry's hook for `type: kubernetes`", () => {
        assert.equal(typeof goneCheckFor(ctx()), "function");
    });
});
