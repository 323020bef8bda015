/**
 * Issue 33 for the kubernetes kind: a member was a Deployment and a Service in state (@pulumi/kubernetes,
 * 14 KB per member); now it is one egress member resource (components/kubernetes/member-provider.ts). A
 * stack made on the test cluster by the release before (built from history, test/helpers/legacy-release.ts)
 * is handed over by this tree's first `up` (src/engine/hand-over.ts): the same Deployments and Services
 * (names and uids), the same pods (no rollout), no member replaced, and state without the old resources.
 * Afterwards the stack behaves as one made by this tree: a second `up` changes nothing, a scale adds a
 * member under a new name, and destroy leaves the namespace empty (Services named apart from their
 * Deployment included).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { checkpointResources } from "../../src/engine";
import { cliAsync, procProject, ProcProject } from "../helpers/processes";
import { BEFORE_KUBE_MEMBER_COMMIT, legacyCliAsync } from "../helpers/legacy-release";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { KUBE_MEMBER_TYPE } from "../../components/kubernetes/member-provider";

const NS = "moved";
const STACK = "k8s-moved";
let cluster: KubeCluster;
let p: ProcProject;

const config = (replicas: number) => ({
    "egress:providers": {
        k8s: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: NS },
    },
    "egress:pools": [{ name: "web", provider: "k8s", replicas, maxReplicas: 3 }],
});

before(async () => {
    cluster = startKubeCluster();
    await cluster.createNamespace(NS);
    p = procProject(STACK, config(2));
});
after(async () => {
    if (p) await cliAsync(p, ["destroy", "--yes", "--quiet"]);
    p?.cleanup();
    cluster?.stop();
});

/** Name → uid of the stack's objects in `collection` (`deployments`, `services`, `pods`). */
async function objects(collection: string): Promise<Record<string, string>> {
    const api =
        collection === "deployments"
            ? `/apis/apps/v1/namespaces/${NS}/${collection}`
            : `/api/v1/namespaces/${NS}/${collection}`;
    const r = await cluster.api("GET", `${api}?labelSelector=${encodeURIComponent(`egress-stack=${STACK}`)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return Object.fromEntries((r.body.items as any[]).map((o) => [o.metadata.name, o.metadata.uid]));
}
const everything = async () => ({
    deployments: await objects("deployments"),
    services: await objects("services"),
    pods: await objects("pods"),
});
const stateTypes = () => ((checkpointResources(p.backendDir, STACK) ?? []) as { type: string }[]).map((r) => r.type);
const changesOf = (stdout: string) => JSON.parse(stdout).changes as Record<string, number>;

test(
    "a kubernetes stack of the release before the member resource is handed over: same objects, same pods, small state",
    { timeout: 900_000 },
    async (t) => {
        const made = await legacyCliAsync(p, ["up", "--quiet"], 300_000, BEFORE_KUBE_MEMBER_COMMIT);
        assert.equal(made.code, 0, `the old release's up: ${made.stderr}\n${made.stdout}`);
        const before = await everything();
        assert.equal(Object.keys(before.deployments).length, 2, JSON.stringify(before));
        assert.equal(Object.keys(before.pods).length, 2, JSON.stringify(before));
        assert.equal(stateTypes().filter((x) => x === "kubernetes:apps/v1:Deployment").length, 2);
        const oldBytes = JSON.stringify(checkpointResources(p.backendDir, STACK)).length;

        const up = await cliAsync(p, ["up", "--json"]);
        assert.equal(up.code, 0, `up: ${up.stderr}\n${up.stdout}`);
        t.diagnostic(`this tree's first up: changes ${JSON.stringify(changesOf(up.stdout))}`);
        assert.match(up.stderr, /handed 4 resource\(s\) of an earlier release's shape over to 2 of this release's/);
        assert.deepEqual(await everything(), before, "the same Deployments, Services and pods (names and uids)");
        assert.ok(!changesOf(up.stdout).delete, `nothing deleted: ${up.stdout}`);
        assert.ok(!changesOf(up.stdout).replace, `nothing replaced: ${up.stdout}`);
        const types = stateTypes();
        assert.ok(!types.includes("kubernetes:apps/v1:Deployment") && !types.includes("kubernetes:core/v1:Service"));
        assert.equal(types.filter((x) => x === KUBE_MEMBER_TYPE).length, 2);
        const newBytes = JSON.stringify(checkpointResources(p.backendDir, STACK)).length;
        t.diagnostic(`state: ${oldBytes} bytes before, ${newBytes} after`);
        assert.ok(newBytes < oldBytes / 2, `state shrank: ${oldBytes} → ${newBytes}`);
        const proxies = JSON.parse(up.stdout).proxies as { id: string; host: string }[];
        for (const m of proxies)
            assert.ok(
                Object.keys(before.services).some((s) => m.host === `${s}.${NS}.svc.cluster.local`),
                m.host,
            );
        // The adopted objects lost the hand-over mark: a later replacement of the member makes new ones.
        const d = await cluster.api(
            "GET",
            `/apis/apps/v1/namespaces/${NS}/deployments/${Object.keys(before.deployments)[0]}`,
        );
        assert.equal(d.body.metadata.annotations?.["egress.dev/adopt"], undefined);

        // gc knows the adopted objects, the Services named apart from their Deployments included.
        const gc = await cliAsync(p, ["gc", "--json"]);
        assert.equal(gc.code, 0, gc.stderr);
        assert.deepEqual(JSON.parse(gc.stdout).orphans, []);

        const again = await cliAsync(p, ["up", "--json"]);
        assert.equal(again.code, 0, again.stderr);
        assert.deepEqual(Object.keys(changesOf(again.stdout)), ["same"], again.stdout);
        assert.doesNotMatch(again.stderr, /handed/);

        p.writeConfig(config(3));
        const scaled = await cliAsync(p, ["up", "--json"]);
        assert.equal(scaled.code, 0, scaled.stderr);
        const after3 = await everything();
        assert.equal(Object.keys(after3.deployments).length, 3);
        for (const [name, uid] of Object.entries(before.deployments)) assert.equal(after3.deployments[name], uid);

        const gone = await cliAsync(p, ["destroy", "--yes", "--json"]);
        assert.equal(gone.code, 0, gone.stderr);
        const left = await everything();
        assert.deepEqual([left.deployments, left.services], [{}, {}]);
    },
);

test(
    "an earlier release's member whose Deployment or Service was deleted behind egress's back: the one left is adopted, the other made anew",
    { timeout: 900_000 },
    async () => {
        const stack = "k8s-moved-b";
        const q = procProject(stack, config(2));
        const named = async (collection: string) => {
            const api =
                collection === "deployments"
                    ? `/apis/apps/v1/namespaces/${NS}/${collection}`
                    : `/api/v1/namespaces/${NS}/${collection}`;
            const r = await cluster.api("GET", `${api}?labelSelector=${encodeURIComponent(`egress-stack=${stack}`)}`);
            return Object.fromEntries(
                (r.body.items as any[]).map((o) => [
                    o.metadata.labels["egress-member"],
                    [o.metadata.name, o.metadata.uid],
                ]),
            ) as Record<string, [string, string]>;
        };
        try {
            const made = await legacyCliAsync(q, ["up", "--quiet"], 300_000, BEFORE_KUBE_MEMBER_COMMIT);
            assert.equal(made.code, 0, made.stderr);
            const [d0, s0] = [await named("deployments"), await named("services")];
            // web-0 loses its Service, web-1 its Deployment.
            assert.equal(
                (await cluster.api("DELETE", `/api/v1/namespaces/${NS}/services/${s0["web-0"][0]}`)).status,
                200,
            );
            const gone = await cluster.api("DELETE", `/apis/apps/v1/namespaces/${NS}/deployments/${d0["web-1"][0]}`);
            assert.equal(gone.status, 200);

            const up = await cliAsync(q, ["up", "--json"]);
            assert.equal(up.code, 0, `up: ${up.stderr}\n${up.stdout}`);
            const [d1, s1] = [await named("deployments"), await named("services")];
            assert.deepEqual(d1["web-0"], d0["web-0"], "web-0's Deployment adopted");
            assert.equal(s1["web-0"][0], d0["web-0"][0], "web-0's Service made anew under its Deployment's name");
            assert.deepEqual(s1["web-1"], s0["web-1"], "web-1's Service adopted");
            assert.notEqual(d1["web-1"][1], d0["web-1"][1], "web-1's Deployment made anew");
            const proxies = JSON.parse(up.stdout).proxies as { id: string; host: string }[];
            assert.deepEqual(
                proxies.map((m) => m.host),
                [`${s1["web-0"][0]}.${NS}.svc.cluster.local`, `${s1["web-1"][0]}.${NS}.svc.cluster.local`],
            );
            const gc = await cliAsync(q, ["gc", "--json"]);
            assert.deepEqual(JSON.parse(gc.stdout).orphans, [], gc.stdout);
            const again = await cliAsync(q, ["up", "--json"]);
            assert.deepEqual(Object.keys(changesOf(again.stdout)), ["same"], again.stdout);
        } finally {
            await cliAsync(q, ["destroy", "--yes", "--quiet"]);
            q.cleanup();
        }
    },
);
