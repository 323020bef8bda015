/**
 * Two installations, one namespace (issue 17 §3), on a real API server with the real provider plugin:
 * two egress homes and projects, each with a stack named `twin` of 2 members in namespace `twins`.
 * `up`, `scale`, a SIGKILLed `up` with its recovery, and `gc --delete` in B leave A's Deployments (same
 * uid: never replaced), Services, pods and outputs as they were; B's Services never select A's pods;
 * `destroy` of B leaves A untouched. Before installation ids, B's `gc --delete` removed A's 5 objects.
 * Last, a stack made by the release before installation ids (test/helpers/legacy-release.ts) upgrades
 * without a Deployment replaced or a pod rolled.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startKubeCluster, KubeCluster } from "../helpers/kube-cluster";
import { cli, procProject, ProcProject, spawnCli } from "../helpers/processes";
import { legacyCli } from "../helpers/legacy-release";
import { checkpointPendingCount } from "../../src/engine";
import { installationOf } from "../helpers/installation";
import { legacyInstallationId } from "../../src/model";
import { waitFor } from "../helpers/harness";

const NS = "twins";
const STACK = "twin";
let cluster: KubeCluster;
let a: ProcProject;
let b: ProcProject;

const config = (namespace = NS) => ({
    "egress:providers": {
        k8s: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace },
    },
    "egress:pools": [{ name: "web", provider: "k8s", replicas: 2, maxReplicas: 4 }],
});
const COLLECTIONS = {
    deployment: `/apis/apps/v1/namespaces/${NS}/deployments`,
    service: `/api/v1/namespaces/${NS}/services`,
    secret: `/api/v1/namespaces/${NS}/secrets`,
};
const PODS = `/api/v1/namespaces/${NS}/pods`;

async function items(collection: string, selector: Record<string, string>): Promise<any[]> {
    const sel = Object.entries(selector)
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
    const r = await cluster.api("GET", `${collection}?labelSelector=${encodeURIComponent(sel)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.items;
}

/** Everything of one installation in the namespace: `kind/name → uid`, its running pods, and its outputs. */
async function snapshot(p: ProcProject) {
    const { installation, source } = installationOf(p);
    assert.equal(source, "recorded");
    const mine = { "egress-installation": installation.id };
    const objects: Record<string, string> = {};
    for (const [kind, c] of Object.entries(COLLECTIONS))
        for (const o of await items(c, mine)) objects[`${kind}/${o.metadata.name}`] = o.metadata.uid;
    const pods = (await items(PODS, mine))
        .filter((x) => x.status.phase === "Running" && !x.metadata.deletionTimestamp)
        .map((x) => x.metadata.name)
        .sort();
    const out = cli(p, ["outputs", "--json"]);
    assert.equal(out.code, 0, out.stderr);
    return { id: installation.id, objects, pods, proxies: JSON.parse(out.stdout).proxies };
}

function ok(p: ProcProject, args: string[]): string {
    const r = cli(p, args, 240_000);
    assert.equal(r.code, 0, `egress ${args.join(" ")}: ${r.stderr}\n${r.stdout}`);
    return r.stdout;
}

let aBefore: Awaited<ReturnType<typeof snapshot>>;
/** A's members are exactly as they were: same objects (uids), pods running, outputs equal. */
async function assertAUntouched(after: string): Promise<void> {
    const now = await snapshot(a);
    assert.deepEqual(
        now.objects,
        aBefore.objects,
        `${after}: A's Deployments, Services and Secret are the same objects`,
    );
    assert.deepEqual(now.proxies, aBefore.proxies, `${after}: A's outputs are intact`);
    assert.equal(now.pods.length, 2, `${after}: A's 2 pods run (${now.pods.join(", ")})`);
}

before(async () => {
    cluster = startKubeCluster();
    await cluster.createNamespace(NS);
    // After the cluster start: it puts the provider plugin on PATH, which the projects' env copies.
    a = procProject(STACK, config());
    b = procProject(STACK, config());
});
after(async () => {
    for (const p of [b, a]) if (p) cli(p, ["destroy", "--yes", "--quiet"], 240_000);
    a?.cleanup();
    b?.cleanup();
    cluster?.stop();
});

test(
    "two `twin` stacks come up side by side with different installations; B's Services select only B's pods",
    { timeout: 600_000 },
    async (t) => {
        let t0 = Date.now();
        ok(a, ["up", "--quiet"]);
        t.diagnostic(`A up (2 members): ${Date.now() - t0} ms; cluster start ${cluster.startMs} ms`);
        aBefore = await snapshot(a);
        assert.equal(Object.keys(aBefore.objects).length, 5, JSON.stringify(aBefore.objects)); // 2 Deployments, 2 Services, 1 Secret
        t0 = Date.now();
        ok(b, ["up", "--quiet"]);
        t.diagnostic(`B up (2 members): ${Date.now() - t0} ms`);
        const bNow = await snapshot(b);
        assert.notEqual(bNow.id, aBefore.id, "two installations, two ids");
        assert.equal(Object.keys(bNow.objects).length, 5);
        assert.deepEqual(
            bNow.proxies.map((x: any) => x.id),
            aBefore.proxies.map((x: any) => x.id),
            "the same member ids",
        );
        assert.notDeepEqual(
            bNow.proxies.map((x: any) => x.host),
            aBefore.proxies.map((x: any) => x.host),
            "different Services",
        );
        await assertAUntouched("B's up");
        for (const [p, id] of [
            [a, aBefore.id],
            [b, bNow.id],
        ] as const) {
            for (const s of await items(COLLECTIONS.service, { "egress-installation": id })) {
                assert.equal(s.spec.selector["egress-installation"], id);
                const selected = await items(PODS, s.spec.selector);
                assert.equal(selected.length, 1, `${s.metadata.name} selects its own member's pod only`);
                assert.equal(selected[0].metadata.labels["egress-installation"], id);
            }
            assert.equal(installationOf(p).installation.id, id);
        }
    },
);

test("B's scale 2 → 3 → 1 leaves A alone", { timeout: 600_000 }, async () => {
    ok(b, ["scale", "web", "3", "--quiet"]);
    assert.equal((await snapshot(b)).pods.length, 3);
    await assertAUntouched("B's scale to 3");
    ok(b, ["scale", "web", "1", "--quiet"]);
    await waitFor("B's removed members' pods gone", async () => (await snapshot(b)).pods.length === 1, 60_000, 250);
    await assertAUntouched("B's scale to 1");
});

test(
    "a SIGKILLed `up` in B, its recovery and B's `gc --delete` leave A alone; gc never lists A's objects",
    { timeout: 600_000 },
    async (t) => {
        const bId = installationOf(b).installation.id;
        b.setReplicas("web", 3);
        const child = spawnCli(b, ["up", "--quiet"]);
        // Killed while its new members' Deployments are being created (the provider waits for their rollout).
        await waitFor(
            "B's new Deployment to appear",
            async () =>
                (await items(COLLECTIONS.deployment, { "egress-installation": bId, "egress-member": "web-2" })).length >
                0,
            120_000,
            20,
        );
        child.kill("SIGKILL");
        await new Promise((r) => child.once("exit", r));
        const pending = checkpointPendingCount(b.backendDir, STACK) ?? 0;
        assert.ok(pending > 0, "the kill left pending creates for recovery to finish");
        t.diagnostic(`pending operations in B's state after the kill: ${pending}`);
        await assertAUntouched("the kill of B's up");

        b.setReplicas("web", 1);
        ok(b, ["up", "--quiet"]); // recovers first: clears the dead run and its pending operations
        assert.equal(checkpointPendingCount(b.backendDir, STACK), 0);
        await assertAUntouched("B's recovery and up");

        const dry = JSON.parse(ok(b, ["gc", "--json"]));
        const aNames = new Set(Object.keys(aBefore.objects).map((k) => k.split("/")[1]));
        assert.deepEqual(
            dry.orphans.filter((o: any) => aNames.has(o.name)),
            [],
            "B's gc lists none of A's objects",
        );
        t.diagnostic(
            `B's gc found ${dry.orphans.length} orphan(s) of its own: ${dry.orphans.map((o: any) => `${o.type}/${o.name}`).join(", ") || "none"}`,
        );
        const del = JSON.parse(ok(b, ["gc", "--delete", "--json"]));
        assert.equal(del.ok, true);
        assert.deepEqual(JSON.parse(ok(b, ["gc", "--json"])).orphans, [], "B's gc removed its own orphans");
        await assertAUntouched("B's gc --delete");
        // And the other way round: A sees nothing of B's as its own.
        assert.deepEqual(
            JSON.parse(ok(a, ["gc", "--json"])).orphans,
            [],
            "A's gc lists nothing (B's objects are not A's)",
        );
    },
);

test(
    "`destroy` of B leaves A's members running; then A's destroy empties the namespace",
    { timeout: 600_000 },
    async () => {
        const bId = installationOf(b).installation.id;
        ok(b, ["destroy", "--yes", "--quiet"]);
        for (const c of Object.values(COLLECTIONS))
            assert.deepEqual(await items(c, { "egress-installation": bId }), [], c);
        await assertAUntouched("B's destroy");
        ok(a, ["destroy", "--yes", "--quiet"]);
        for (const c of Object.values(COLLECTIONS)) assert.deepEqual(await items(c, { "egress-stack": STACK }), [], c);
    },
);

test(
    "a stack made before installation ids upgrades in place: same Deployments, same pods, the label added",
    { timeout: 900_000 },
    async (t) => {
        const ns = "upgrade";
        await cluster.createNamespace(ns);
        const old = procProject("old", config(ns));
        const col = (c: string) => c.replace(`/namespaces/${NS}/`, `/namespaces/${ns}/`);
        const state = async () => {
            const deployments = await items(col(COLLECTIONS.deployment), { "egress-stack": "old" });
            const pods = (await items(col(PODS), { "egress-stack": "old" })).filter(
                (x) => x.status.phase === "Running" && !x.metadata.deletionTimestamp,
            );
            return {
                deployments,
                uids: deployments.map((d) => `${d.metadata.name}=${d.metadata.uid}`).sort(),
                pods: pods.map((x) => x.metadata.name).sort(),
            };
        };
        try {
            let t0 = Date.now();
            const made = legacyCli(old, ["up", "--quiet"]);
            assert.equal(made.code, 0, made.stderr);
            t.diagnostic(`legacy release up (2 members): ${Date.now() - t0} ms`);
            const before = await state();
            const outputs = JSON.parse(ok(old, ["outputs", "--json"])).proxies;
            assert.equal(before.pods.length, 2);
            assert.equal(
                before.deployments[0].metadata.labels["egress-installation"],
                undefined,
                "the old release labels no installation",
            );

            t0 = Date.now();
            ok(old, ["up", "--quiet"]);
            t.diagnostic(`first up after the upgrade: ${Date.now() - t0} ms`);
            const id = legacyInstallationId("egress", "old");
            assert.deepEqual(installationOf(old), { installation: { id, legacy: true }, source: "recorded" });
            const after = await state();
            assert.deepEqual(after.uids, before.uids, "no Deployment was replaced");
            assert.deepEqual(after.pods, before.pods, "no pod was rolled");
            for (const d of after.deployments) {
                assert.equal(d.metadata.labels["egress-installation"], id, "the metadata carries the adopted id");
                assert.equal(
                    d.spec.selector.matchLabels["egress-installation"],
                    undefined,
                    "the immutable selector is as it was",
                );
            }
            for (const c of [COLLECTIONS.service, COLLECTIONS.secret])
                assert.equal(
                    (await items(col(c), { "egress-installation": id })).length,
                    c === COLLECTIONS.secret ? 1 : 2,
                    c,
                );
            assert.deepEqual(JSON.parse(ok(old, ["outputs", "--json"])).proxies, outputs);
            assert.deepEqual(JSON.parse(ok(old, ["gc", "--json"])).orphans, []);
            assert.deepEqual(
                Object.keys(JSON.parse(ok(old, ["up", "--json"])).changes),
                ["same"],
                "the next up has nothing to do",
            );
        } finally {
            cli(old, ["destroy", "--yes", "--quiet"], 240_000);
            old.cleanup();
        }
    },
);
