/**
 * The GCE member resource's provider (components/gcp/member-provider.ts) against the Compute stand-in
 * (test/fixtures/gcp/fake-compute.ts): made from its pool's template, read, diffed, deleted, and the
 * hand-over of an earlier release's instance (components/gcp/hand-over.ts), adopted or replaced.
 */
import { after, before, beforeEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { FakeCompute, startFakeCompute } from "../fixtures/gcp/fake-compute";
import { REPAIR_REPLACE_KEY } from "../../components/kind";
import { gcpMemberProvider as provider, GcpMemberInputs } from "../../components/gcp/member-provider";
import { gcpHandOvers, gcpMemberUrnOf } from "../../components/gcp/hand-over";
import { ADOPT_LABEL } from "../../components/gcp/member-instance";

const TOKEN = "ya29.member-token";
const PROJECT = "crawl-proxies";
const ZONE = "europe-west1-b";
const POOL_LABELS = {
    "egress-project": "egress",
    "egress-stack": "dev",
    "egress-installation": "01234567",
    "egress-pool": "web",
};
const USER_DATA = "#cloud-config\npackages: [squid]\n";
let fake: FakeCompute;

const template = (name: string, machineType = "e2-micro", userData = USER_DATA) => ({
    name,
    properties: {
        machineType,
        labels: POOL_LABELS,
        metadata: { items: [{ key: "user-data", value: userData }] },
        networkInterfaces: [{ network: "default", accessConfigs: [{}] }],
    },
});
const inputs = (over: Partial<GcpMemberInputs["member"]> = {}): GcpMemberInputs => ({
    member: { project: PROJECT, zone: ZONE, name: "web-0", tpl: "tpl-a", ...over },
});
const config = (values: Record<string, string>) => ({ config: { get: (k: string) => values[k] } }) as any;
/** The stack config a hand-over reads credentials from (src/engine/hand-over.ts). */
const stackConfig = (k: string) => (k === "gcp:accessToken" ? TOKEN : undefined);
const instanceNamed = (name: string) => fake.instances.find((i) => i.name === name);
const nameOf = (id: string) => id.split("/").pop()!;
/** A create, its outputs as the engine keeps them. */
async function make(i: GcpMemberInputs) {
    const r = await provider.create!(i);
    return { id: r.id, outs: r.outs! };
}

before(async () => {
    fake = await startFakeCompute(PROJECT, TOKEN);
    // The endpoint the gcp provider reads too; credentials as stack config gives them.
    process.env.GOOGLE_COMPUTE_CUSTOM_ENDPOINT = `${fake.url}/compute/v1/`;
    await provider.configure!(config({ "gcp:accessToken": TOKEN }));
});
after(() => fake.close());
beforeEach(() => {
    fake.instances.length = 0;
    fake.requests.length = 0;
    fake.templates.length = 0;
    fake.templates.push(template("tpl-a"), template("tpl-b", "e2-small"));
});

describe("gcp member provider", () => {
    it("makes the instance from its template with the pool's labels and its own, and keeps few bytes", async () => {
        const { id, outs } = await make(inputs());
        assert.match(id, /^projects\/crawl-proxies\/zones\/europe-west1-b\/instances\/web-0-vm-[0-9a-f]{7}$/);
        const made = instanceNamed(nameOf(id));
        assert.equal(made.sourceInstanceTemplate, "tpl-a");
        assert.deepEqual(made.labels, { ...POOL_LABELS, "egress-member": "web-0" });
        assert.equal(outs.ip, made.networkInterfaces[0].accessConfigs[0].natIP);
        assert.deepEqual(Object.keys(outs).sort(), ["digest", "ip"]);
        assert.ok(JSON.stringify(outs).length < 80, JSON.stringify(outs));
    });

    it("gives a member with a static address its own interface", async () => {
        const nic = { network: "global/networks/default", natIp: "198.51.100.9" };
        const { outs } = await make(inputs({ nic }));
        assert.equal(outs.ip, "198.51.100.9");
    });

    it("reads a stopped or missing instance as gone; the diff then replaces it as a repair", async () => {
        const { id, outs } = await make(inputs());
        assert.deepEqual((await provider.read!(id, outs)).props, outs);
        instanceNamed(nameOf(id)).status = "TERMINATED";
        const stopped = (await provider.read!(id, outs)).props!;
        assert.equal(stopped.gone, true);
        assert.deepEqual(await provider.diff!(id, stopped, inputs()), {
            changes: true,
            replaces: [REPAIR_REPLACE_KEY],
        });
        fake.instances.length = 0;
        assert.equal((await provider.read!(id, outs)).props?.gone, true);
    });

    it("changes nothing for the same inputs; a new template or zone replaces the member", async () => {
        const { id, outs } = await make(inputs());
        assert.deepEqual(await provider.diff!(id, outs, inputs()), { changes: false, replaces: [] });
        assert.deepEqual(await provider.diff!(id, outs, inputs({ tpl: "tpl-b" })), {
            changes: true,
            replaces: ["member"],
        });
        assert.deepEqual((await provider.diff!(id, outs, inputs({ zone: "europe-west1-c" }))).replaces, ["member"]);
    });

    it("deletes the instance, and a delete of one already gone succeeds", async () => {
        const { id, outs } = await make(inputs());
        await provider.delete!(id, outs);
        assert.equal(fake.instances.length, 0);
        await provider.delete!(id, outs);
    });

    it("fails a create whose template is missing, leaving nothing behind", async () => {
        await assert.rejects(make(inputs({ tpl: "tpl-missing" })), /tpl-missing/);
        assert.equal(fake.instances.length, 0);
    });
});

describe("gcp hand-over of an earlier release's instance", () => {
    const OLD_URN =
        "urn:pulumi:dev::egress::egress:index:ProxyPool$egress:gcp:GcpProxy$gcp:compute/instance:Instance::web-0-vm";

    /** An instance as the gcp provider made it (gcp-proxy.ts before the member resource), from tpl-a's content. */
    function earlierInstance(
        machineType = "e2-micro",
        labels: Record<string, string> = POOL_LABELS,
        natIP = "203.0.113.200",
    ) {
        const made = {
            kind: "compute#instance",
            name: "web-0-vm-1a2b3c4",
            zone: `https://www.googleapis.com/compute/v1/projects/${PROJECT}/zones/${ZONE}`,
            status: "RUNNING",
            labels: { ...labels, "egress-member": "web-0" },
            labelFingerprint: "fp-old",
            machineType: `https://www.googleapis.com/compute/v1/projects/${PROJECT}/zones/${ZONE}/machineTypes/${machineType}`,
            metadata: { items: [{ key: "user-data", value: USER_DATA }] },
            networkInterfaces: [{ accessConfigs: [{ natIP }] }],
        };
        fake.instances.push(made);
        return `projects/${PROJECT}/zones/${ZONE}/instances/${made.name}`;
    }

    it("names the member resource that takes a member's instance over, and nothing else", () => {
        assert.equal(
            gcpMemberUrnOf(OLD_URN),
            "urn:pulumi:dev::egress::egress:index:ProxyPool$egress:gcp:GcpProxy$pulumi-nodejs:dynamic/egress:gcp:Member::web-0",
        );
        assert.equal(gcpMemberUrnOf(OLD_URN.replace("GcpProxy", "Other")), "");
        assert.equal(gcpMemberUrnOf(OLD_URN.replace("web-0-vm", "web-0-ip")), "");
    });

    it("marks the instance; the member's create adopts it as it runs, and unmarks it", async () => {
        const id = earlierInstance();
        const handOver = gcpHandOvers["gcp:compute/instance:Instance"];
        assert.equal(
            await handOver({ urn: OLD_URN, id, outputs: {} }, undefined, stackConfig),
            gcpMemberUrnOf(OLD_URN),
        );
        assert.equal(instanceNamed("web-0-vm-1a2b3c4").labels[ADOPT_LABEL], "true");
        const created = await make(inputs());
        assert.equal(created.id, id, "the same instance");
        assert.equal(created.outs.ip, "203.0.113.200");
        assert.equal(fake.instances.length, 1, "no new instance");
        assert.deepEqual(instanceNamed("web-0-vm-1a2b3c4").labels, { ...POOL_LABELS, "egress-member": "web-0" });
        assert.ok(!fake.requests.some((r) => r.method === "POST" && r.path.endsWith(`/zones/${ZONE}/instances`)));
    });

    it("replaces a handed-over instance the template no longer makes (another machine type)", async () => {
        const id = earlierInstance("e2-small");
        await gcpHandOvers["gcp:compute/instance:Instance"]({ urn: OLD_URN, id, outputs: {} }, undefined, stackConfig);
        const created = await make(inputs());
        assert.notEqual(created.id, id);
        assert.deepEqual(
            fake.instances.map((i) => i.name),
            [nameOf(created.id)],
            "the old instance went once the new one was made",
        );
    });

    it("hands over an instance deleted behind egress's back all the same (the member makes a new one)", async () => {
        const id = `projects/${PROJECT}/zones/${ZONE}/instances/web-0-vm-gone000`;
        const handOver = gcpHandOvers["gcp:compute/instance:Instance"];
        assert.equal(
            await handOver({ urn: OLD_URN, id, outputs: {} }, undefined, stackConfig),
            gcpMemberUrnOf(OLD_URN),
        );
        const created = await make(inputs());
        assert.equal(fake.instances.length, 1);
        assert.equal(instanceNamed(nameOf(created.id)).sourceInstanceTemplate, "tpl-a");
    });

    it("adopts an instance of a stack made before installation ids (no installation label), and labels it", async () => {
        const { "egress-installation": _, ...older } = POOL_LABELS;
        const id = earlierInstance("e2-micro", older);
        await gcpHandOvers["gcp:compute/instance:Instance"]({ urn: OLD_URN, id, outputs: {} }, undefined, stackConfig);
        const created = await make(inputs());
        assert.equal(created.id, id);
        assert.equal(instanceNamed("web-0-vm-1a2b3c4").labels["egress-installation"], "01234567");
    });

    it("a static address moves: the handed-over instance that is not adopted gives it up before the new one", async () => {
        const id = earlierInstance("e2-small", POOL_LABELS, "198.51.100.9");
        await gcpHandOvers["gcp:compute/instance:Instance"]({ urn: OLD_URN, id, outputs: {} }, undefined, stackConfig);
        const created = await make(inputs({ nic: { network: "global/networks/default", natIp: "198.51.100.9" } }));
        assert.notEqual(created.id, id);
        assert.equal(created.outs.ip, "198.51.100.9");
        assert.deepEqual(
            fake.instances.map((i) => i.name),
            [nameOf(created.id)],
        );
    });
});

describe("Compute operations", () => {
    it("a wait GCE answers late is asked again until the operation is done", async () => {
        const { GcpComputeClient } = await import("../../components/gcp/api");
        await make(inputs());
        fake.holdWaits = 2; // the next two wait calls never answer
        const client = new GcpComputeClient(PROJECT, {
            endpoint: fake.url,
            accessToken: TOKEN,
            waitCallMs: 300,
            env: {},
        });
        assert.equal(await client.delete(`zones/${ZONE}/instances/${fake.instances[0].name}`), true);
        assert.equal(fake.holdWaits, 0);
        assert.equal(fake.instances.length, 0);
    });
});
