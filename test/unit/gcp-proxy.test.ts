import { before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { installMocks, isSecret, ofType, recorded, settle, valueOf } from "../helpers/pulumi-mocks";
import { parseEgressConfig } from "../../src/config";
import type { StackContext } from "../../src/model";
import { squidPasswdFile } from "../../components/shared/squid-passwd";
import { TEST_INSTALLATION } from "../helpers/installation";

const root = path.resolve(__dirname, "..", "..", "..");
const fixture = (f: string) => fs.readFileSync(path.join(root, "test/fixtures", f), "utf8");
const context: StackContext = {
    project: "egress",
    stack: "test",
    projectRoot: root,
    stateDir: "/tmp/egress-test",
    installation: TEST_INSTALLATION,
};
const RANGES = ["203.0.113.0/24", "198.51.100.7/32"];
const AUTH = { username: "crawler", password: "gcp-canary-password-42" };

type Mod = typeof import("../../components/pool");
let pool: Mod;
let gcpMod: typeof import("../../components/gcp/component");

before(async () => {
    await installMocks("egress", "test");
    pool = await import("../../components/pool");
    gcpMod = await import("../../components/gcp/component");
});

function config(poolOver: Record<string, unknown>, entryOver: Record<string, unknown> = {}) {
    return parseEgressConfig(
        {
            providers: {
                "gcp-eu": {
                    type: "gcp",
                    project: "crawl-proxies",
                    zones: ["europe-west1-b", "europe-west1-c"],
                    allowedSourceRanges: RANGES,
                    ...entryOver,
                },
            },
            pools: [{ provider: "gcp-eu", auth: AUTH, ...poolOver }],
        },
        root,
    );
}

async function build(poolOver: Record<string, unknown>, entryOver: Record<string, unknown> = {}) {
    const cfg = config(poolOver, entryOver);
    const p = new pool.ProxyPool(cfg.pools[0].name, {
        pool: cfg.pools[0],
        providerName: "gcp-eu",
        entry: cfg.providers["gcp-eu"],
        context,
    });
    const members = await valueOf(p.members);
    await settle();
    return { members, cfg };
}

const byName = (type: string, name: string) => {
    const r = recorded.find((x) => x.type === type && x.name === name);
    assert.ok(
        r,
        `no ${type} named ${name}; have ${recorded
            .filter((x) => x.type === type)
            .map((x) => x.name)
            .join(", ")}`,
    );
    return r;
};

describe("GcpProxy under mocks", () => {
    it("creates one instance per member with overrides applied, user-data byte for byte and member labels", async () => {
        const { members } = await build({
            name: "web",
            replicas: 3,
            cloudInit: { file: "test/fixtures/squid-3128.yaml" },
            members: [
                { index: 1, port: 8080, cloudInit: { file: "test/fixtures/squid-8080.yaml" } },
                { index: 2, placement: { zone: "europe-west1-c", machineType: "e2-small" } },
            ],
        });
        assert.deepEqual(
            ofType("gcp:compute/instance:Instance", "web-").map((r) => r.name),
            ["web-0-vm", "web-1-vm", "web-2-vm"],
        );
        const [vm0, vm1, vm2] = ["web-0-vm", "web-1-vm", "web-2-vm"].map(
            (n) => byName("gcp:compute/instance:Instance", n).inputs,
        );
        assert.equal(vm0.machineType, "e2-micro");
        assert.equal(vm0.zone, "europe-west1-b");
        assert.equal(vm2.zone, "europe-west1-c");
        assert.equal(vm2.machineType, "e2-small");
        assert.equal(vm0.metadata["user-data"], fixture("squid-3128.yaml"));
        assert.equal(vm1.metadata["user-data"], fixture("squid-8080.yaml"));
        // Cloud-init may carry credentials: it reaches state encrypted.
        assert.ok(
            isSecret(byName("gcp:compute/instance:Instance", "web-1-vm").raw.metadata),
            "user-data is not a secret",
        );
        assert.equal(vm0.bootDisk.initializeParams.image, "ubuntu-os-cloud/ubuntu-2404-lts-amd64");
        assert.deepEqual(vm1.labels, {
            "egress-project": "egress",
            "egress-stack": "test",
            "egress-installation": TEST_INSTALLATION.id,
            "egress-pool": "web",
            "egress-member": "web-1",
        });
        assert.deepEqual(vm0.networkInterfaces[0].accessConfigs, [{}]);
        assert.equal(vm0.scheduling.provisioningModel, "STANDARD");
        const tag = gcpMod.poolNetworkTag(context, "web");
        assert.deepEqual(vm0.tags, [tag]);

        assert.deepEqual(
            members.map((m) => [m.id, m.port, m.zone, m.kind]),
            [
                ["web-0", 3128, "europe-west1-b", "gcp"],
                ["web-1", 8080, "europe-west1-b", "gcp"],
                ["web-2", 3128, "europe-west1-c", "gcp"],
            ],
        );
        assert.match(members[0].host, /^203\.0\.113\.\d+$/);
        assert.equal(members[1].url, `http://${members[1].host}:8080`);
    });

    it("opens only the members' tcp ports to allowedSourceRanges on the pool's tag, through the entry's provider", async () => {
        const fw = byName("gcp:compute/firewall:Firewall", "web-fw").inputs;
        assert.deepEqual(fw.allows, [{ protocol: "tcp", ports: ["3128", "8080"] }]);
        assert.deepEqual(fw.sourceRanges, RANGES);
        assert.deepEqual(fw.targetTags, [gcpMod.poolNetworkTag(context, "web")]);
        assert.equal(fw.direction, "INGRESS");
        assert.equal(fw.network, "default");
        assert.deepEqual(gcpMod.parseFirewallDescription(fw.description), {
            project: "egress",
            stack: "test",
            pool: "web",
            installation: TEST_INSTALLATION.id,
        });
        const prov = byName("pulumi:providers:gcp", "web-gcp");
        assert.equal(prov.inputs.project, "crawl-proxies");
        for (const r of [
            ...ofType("gcp:compute/instance:Instance", "web-"),
            byName("gcp:compute/firewall:Firewall", "web-fw"),
        ])
            assert.match(r.provider ?? "", /pulumi:providers:gcp::web-gcp::web-gcp-id$/);
    });

    it("scaling down keeps the lowest indices; overrides beyond replicas plan nothing and leave the firewall", async () => {
        await build({ name: "small", replicas: 1, members: [{ index: 1, port: 8080 }] });
        assert.deepEqual(
            ofType("gcp:compute/instance:Instance", "small-").map((r) => r.name),
            ["small-0-vm"],
        );
        assert.deepEqual(byName("gcp:compute/firewall:Firewall", "small-fw").inputs.allows[0].ports, ["3128"]);
        // No cloud-init configured: the generated squid config, admitting only the allowed ranges, with the
        // pool's credentials (hashed in the passwd file; the clear password appears nowhere in the inputs).
        const userData = byName("gcp:compute/instance:Instance", "small-0-vm").inputs.metadata["user-data"];
        assert.equal(userData, gcpMod.defaultCloudInit(3128, RANGES, squidPasswdFile(AUTH, "test/small")));
        assert.ok(
            isSecret(byName("gcp:compute/instance:Instance", "small-0-vm").raw.metadata),
            "user-data (with the passwd hash) is a secret",
        );
        assert.ok(!JSON.stringify(recorded).includes(AUTH.password), "the clear password is in no resource's inputs");
    });

    it("creates no firewall for an empty pool (an empty GCE port list would open every port)", async () => {
        const { members } = await build({ name: "empty", replicas: 0 });
        assert.deepEqual(members, []);
        assert.deepEqual(ofType("gcp:compute/firewall:Firewall", "empty-"), []);
    });

    it("reserves a regional static address per member and publishes it as the host", async () => {
        const { members } = await build({ name: "static", replicas: 1 }, { staticAddress: true, spot: true });
        const addr = byName("gcp:compute/address:Address", "static-0-ip").inputs;
        assert.equal(addr.region, "europe-west1");
        assert.equal(addr.addressType, "EXTERNAL");
        assert.equal(addr.labels["egress-member"], "static-0");
        const vm = byName("gcp:compute/instance:Instance", "static-0-vm").inputs;
        assert.equal(vm.networkInterfaces[0].accessConfigs[0].natIp, members[0].host);
        assert.match(members[0].host, /^198\.51\.100\.\d+$/);
        assert.deepEqual(vm.scheduling, {
            provisioningModel: "SPOT",
            preemptible: true,
            automaticRestart: false,
            instanceTerminationAction: "STOP",
        });
    });

    it("splits IPv4 and IPv6 source ranges into two rules (GCE refuses mixed rules)", async () => {
        await build({ name: "dual", replicas: 1 }, { allowedSourceRanges: ["203.0.113.0/24", "2001:db8::/32"] });
        assert.deepEqual(byName("gcp:compute/firewall:Firewall", "dual-fw").inputs.sourceRanges, ["203.0.113.0/24"]);
        const v6 = byName("gcp:compute/firewall:Firewall", "dual-fw-v6").inputs;
        assert.deepEqual(v6.sourceRanges, ["2001:db8::/32"]);
        assert.notEqual(v6.name, byName("gcp:compute/firewall:Firewall", "dual-fw").inputs.name);
    });
});

describe("gcp naming", () => {
    it("pool resource names are valid GCE names, at most 63 characters, unique per project/stack/pool", () => {
        const long = gcpMod.poolResourceName(
            { ...context, stack: "a-very-long-stack-name-for-testing-limits" },
            "pool-with-a-rather-long-name-too",
            "v6",
        );
        assert.ok(long.length <= 63, long);
        assert.match(long, /^[a-z]([-a-z0-9]*[a-z0-9])?$/);
        assert.notEqual(
            gcpMod.poolResourceName(context, "web"),
            gcpMod.poolResourceName({ ...context, project: "other" }, "web"),
        );
        assert.equal(gcpMod.regionOf("us-central1-a"), "us-central1");
    });
});
