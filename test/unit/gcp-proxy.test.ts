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

const MEMBER = "pulumi-nodejs:dynamic/egress:gcp:Member";
const TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate";

/** The member resource of `member`, and the instance template it is made from. */
function memberAndTemplate(member: string) {
    const m = byName(MEMBER, member);
    const tpl = recorded.find((r) => r.type === TEMPLATE && r.inputs.name === m.inputs.member.tpl);
    assert.ok(tpl, `no template ${m.inputs.member.tpl} for ${member}`);
    return { m: m.inputs.member, tpl: tpl.inputs, rawTpl: tpl.raw };
}

describe("GcpProxy under mocks", () => {
    it("makes each member from its shape's template: overrides applied, user-data byte for byte, pool labels", async () => {
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
            ofType(MEMBER, "web-").map((r) => r.name),
            ["web-0", "web-1", "web-2"],
        );
        const [vm0, vm1, vm2] = ["web-0", "web-1", "web-2"].map(memberAndTemplate);
        // A member's state keeps its own part only.
        assert.deepEqual(vm0.m, { project: "crawl-proxies", zone: "europe-west1-b", name: "web-0", tpl: vm0.tpl.name });
        assert.equal(vm2.m.zone, "europe-west1-c");
        assert.equal(vm0.tpl.machineType, "e2-micro");
        assert.equal(vm2.tpl.machineType, "e2-small");
        assert.equal(vm0.tpl.metadata["user-data"], fixture("squid-3128.yaml"));
        assert.equal(vm1.tpl.metadata["user-data"], fixture("squid-8080.yaml"));
        // Cloud-init may carry credentials: it reaches state encrypted.
        assert.ok(isSecret(vm1.rawTpl.metadata), "user-data is not a secret");
        assert.equal(vm0.tpl.disks[0].sourceImage, "ubuntu-os-cloud/ubuntu-2404-lts-amd64");
        assert.deepEqual(vm1.tpl.labels, {
            "egress-project": "egress",
            "egress-stack": "test",
            "egress-installation": TEST_INSTALLATION.id,
            "egress-pool": "web",
        });
        assert.deepEqual(vm0.tpl.networkInterfaces[0].accessConfigs, [{}]);
        assert.equal(vm0.tpl.scheduling.provisioningModel, "STANDARD");
        assert.deepEqual(vm0.tpl.tags, [gcpMod.poolNetworkTag(context, "web")]);
        // One template per distinct content: web-0 and web-3 (the next scale's shape) share one.
        assert.equal(new Set([vm0, vm1, vm2].map((v) => v.tpl.name)).size, 3);
        assert.equal(ofType(TEMPLATE, "").filter((t) => t.inputs.description.endsWith(" web")).length, 3);

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
            ...ofType(TEMPLATE, "").filter((t) => t.inputs.description.endsWith(" web")),
            byName("gcp:compute/firewall:Firewall", "web-fw"),
        ])
            assert.match(r.provider ?? "", /pulumi:providers:gcp::web-gcp::web-gcp-id$/);
    });

    it("scaling down keeps the lowest indices; overrides beyond replicas plan nothing and leave the firewall", async () => {
        await build({ name: "small", replicas: 1, members: [{ index: 1, port: 8080 }] });
        assert.deepEqual(
            ofType(MEMBER, "small-").map((r) => r.name),
            ["small-0"],
        );
        assert.deepEqual(byName("gcp:compute/firewall:Firewall", "small-fw").inputs.allows[0].ports, ["3128"]);
        // No cloud-init configured: the generated squid config, admitting only the allowed ranges, with the
        // pool's credentials (hashed in the passwd file; the clear password appears nowhere in the inputs).
        const small = memberAndTemplate("small-0");
        const userData = small.tpl.metadata["user-data"];
        assert.equal(userData, gcpMod.defaultCloudInit(3128, RANGES, squidPasswdFile(AUTH, "test/small")));
        assert.ok(isSecret(small.rawTpl.metadata), "user-data (with the passwd hash) is a secret");
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
        const vm = memberAndTemplate("static-0");
        assert.deepEqual(vm.m.nic, { network: "global/networks/default", natIp: members[0].host });
        assert.match(members[0].host, /^198\.51\.100\.\d+$/);
        assert.deepEqual(vm.tpl.scheduling, {
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

describe("GcpProxy in a shard stack", () => {
    it("makes the shard's own templates, named apart, and no firewall (the installation stack's admits its members)", async () => {
        const cfg = config({ name: "big", replicas: 4, membersPerStack: 2 });
        const p = new pool.ProxyPool("big", {
            pool: cfg.pools[0],
            providerName: "gcp-eu",
            entry: cfg.providers["gcp-eu"],
            context,
            only: new Set(["big-2", "big-3"]),
            shard: 1,
        });
        const members = await valueOf(p.members);
        await settle();
        assert.deepEqual(
            members.map((m) => m.id),
            ["big-2", "big-3"],
        );
        assert.deepEqual(ofType("gcp:compute/firewall:Firewall", "big-"), []);
        const { m, tpl } = memberAndTemplate("big-2");
        assert.match(m.tpl, /^egress-test-big-t[0-9a-f]{8}-s1-[0-9a-f]{6}$/);
        assert.equal(tpl.name, m.tpl);
        assert.deepEqual(tpl.tags, [gcpMod.poolNetworkTag(context, "big")]);
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
