import { before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { installMocks, recorded, settle, valueOf } from "../helpers/pulumi-mocks";
import { loadStackConfig, parseEgressConfig } from "../../src/config";
import { TEST_INSTALLATION } from "../helpers/installation";

const root = path.resolve(__dirname, "..", "..", "..");
let createProgram: typeof import("../../src/program").createProgram;
const GCP_EU = {
    type: "gcp",
    project: "crawl-proxies",
    zones: ["europe-west1-b"],
    allowedSourceRanges: ["203.0.113.0/24"],
};
const auth = { username: "crawler", password: "test-password-0123" };

before(async () => {
    await installMocks("egress", "remote");
    ({ createProgram } = await import("../../src/program"));
});

describe("program with gcp and kubernetes pools", () => {
    it("builds the expected resource graph and exports every member as a proxy", async () => {
        const config = parseEgressConfig(
            {
                providers: {
                    "gcp-eu": GCP_EU,
                    k8s: { type: "kubernetes", context: "prod", namespace: "egress" },
                },
                pools: [
                    { name: "eu", provider: "gcp-eu", replicas: 2, auth },
                    { name: "pods", provider: "k8s", replicas: 2, members: [{ index: 1, port: 8080 }] },
                ],
            },
            root,
        );
        const outputs = await createProgram({
            projectRoot: root,
            stateDir: "/tmp/egress-remote",
            config,
            installation: () => TEST_INSTALLATION,
        })();
        const proxies = await valueOf(outputs.proxies);
        await settle();
        // A template's name ends with its content's digest and its owner's hash (components/gcp/pool-templates.ts).
        const graph = recorded
            .map((r) => `${r.type} ${r.name}`.replace(/ egress-remote-eu-t[0-9a-f]{8}-[0-9a-f]{6}$/, " <eu template>"))
            .sort();
        assert.deepEqual(
            graph,
            [
                "egress:gcp:GcpProxy eu-0",
                "egress:gcp:GcpProxy eu-1",
                "egress:index:ProxyPool eu",
                "egress:index:ProxyPool pods",
                "egress:kubernetes:PodProxy pods-0",
                "egress:kubernetes:PodProxy pods-1",
                "gcp:compute/firewall:Firewall eu-fw",
                // Both members' shape, and the next one a scale adds: one template.
                "gcp:compute/instanceTemplate:InstanceTemplate <eu template>",
                "kubernetes:core/v1:ConfigMap pods-members",
                "kubernetes:core/v1:Secret pods-config",
                "pulumi-nodejs:dynamic/egress:kubernetes:Member pods-0",
                "pulumi-nodejs:dynamic/egress:kubernetes:Member pods-1",
                "pulumi-nodejs:dynamic/egress:installation:Identity installation",
                "pulumi-nodejs:dynamic/egress:gcp:Member eu-0",
                "pulumi-nodejs:dynamic/egress:gcp:Member eu-1",
                "pulumi:providers:gcp eu-gcp",
                "pulumi:providers:kubernetes pods-k8s",
            ].sort(),
        );
        assert.deepEqual(
            proxies.map((p) => [p.id, p.pool, p.provider, p.kind, p.port]),
            [
                ["eu-0", "eu", "gcp-eu", "gcp", 3128],
                ["eu-1", "eu", "gcp-eu", "gcp", 3128],
                ["pods-0", "pods", "k8s", "kubernetes", 3128],
                ["pods-1", "pods", "k8s", "kubernetes", 8080],
            ],
        );
        assert.equal(proxies[3].url, "http://pods-1-a1b2c3.egress.svc.cluster.local:8080");
        // Labels carry the stack the mocks run as, so `egress gc` for this stack finds them.
        // (a GCE member's labels are its template's and its own name: components/gcp/member-instance.ts).
        const vm = recorded.find((r) => r.type === "gcp:compute/instanceTemplate:InstanceTemplate")!;
        assert.equal(vm.inputs.labels["egress-stack"], "remote");
        // ...and the installation the program recorded (the identity resource's output under mocks: the proposal).
        assert.equal(vm.inputs.labels["egress-installation"], TEST_INSTALLATION.id);
        assert.equal(outputs.installation, TEST_INSTALLATION.id);
        const { installation, legacy } = recorded.find((r) => r.name === "installation")!.inputs;
        assert.deepEqual({ installation, legacy }, { installation: TEST_INSTALLATION.id, legacy: false });
    });

    it("a scoped run (a targeted up's) registers its members alone and carries the rest into `proxies`", async () => {
        const config = parseEgressConfig(
            {
                providers: { "gcp-eu": GCP_EU },
                pools: [
                    { name: "eu", provider: "gcp-eu", replicas: 3, auth },
                    { name: "us", provider: "gcp-eu", replicas: 1, auth },
                ],
            },
            root,
        );
        const member = (pool: string, index: number, host: string) => ({
            id: `${pool}-${index}`,
            pool,
            index,
            provider: "gcp-eu",
            kind: "gcp",
            zone: "europe-west1-b",
            host,
            port: 3128,
            url: `http://${host}:3128`,
        });
        // State's members: eu-1 is being replaced (a heal), eu-2 is new (a scale), eu-4 is beyond the count,
        // and pool `gone` is no longer configured.
        const carried = [
            member("eu", 0, "192.0.2.10"),
            member("eu", 1, "192.0.2.11"),
            member("eu", 4, "192.0.2.14"),
            member("us", 0, "192.0.2.20"),
            member("gone", 0, "192.0.2.30"),
        ];
        recorded.length = 0;
        const outputs = await createProgram({
            projectRoot: root,
            stateDir: "/tmp/egress-remote",
            config,
            installation: () => TEST_INSTALLATION,
            scope: () => ({ members: new Set(["eu-1", "eu-2"]), carried }),
        })();
        const proxies = await valueOf(outputs.proxies);
        await settle();
        const members = recorded.filter((r) => r.type === "egress:gcp:GcpProxy").map((r) => r.name);
        assert.deepEqual(members.sort(), ["eu-1", "eu-2"], "only the scope's members are registered");
        assert.deepEqual(
            proxies.map((p) => [p.id, p.host]),
            [
                ["eu-0", "192.0.2.10"],
                ["eu-1", proxies[1].host],
                ["eu-2", proxies[2].host],
                ["us-0", "192.0.2.20"],
            ],
        );
        assert.notEqual(proxies[1].host, "192.0.2.11", "eu-1's address is the new run's, not state's");
    });

    it("the example stacks validate", () => {
        const gcp = loadStackConfig(root, "example-gcp");
        assert.equal(gcp.providers["gcp-eu"].type, "gcp");
        assert.deepEqual(
            gcp.pools.map((p) => [p.name, p.replicas]),
            [["eu", 2]],
        );
        const k8s = loadStackConfig(root, "example-k8s");
        assert.equal(k8s.providers.k8s.type, "kubernetes");
        assert.deepEqual(k8s.pools[0].members, [{ index: 2, port: 8080 }]);
    });
});
