import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { FakeCompute, startFakeCompute } from "../fixtures/gcp/fake-compute";
import { gcpCollector } from "../../components/gcp/gc";
import { firewallDescription, poolResourceName } from "../../components/gcp/names";
import { parseEgressConfig } from "../../src/config";
import type { GcpProviderConfig } from "../../components/gcp/config";
import { TEST_INSTALLATION } from "../helpers/installation";

const TOKEN = "ya29.test-token";
const P = "https://www.googleapis.com/compute/v1/projects/crawl-proxies";
let fake: FakeCompute;
const entry = parseEgressConfig(
    {
        providers: {
            "gcp-eu": {
                type: "gcp",
                project: "crawl-proxies",
                zones: ["europe-west1-b"],
                allowedSourceRanges: ["203.0.113.0/24"],
            },
        },
    },
    "/",
).providers["gcp-eu"] as GcpProviderConfig;
const ctx = (stack: string) => ({
    project: "egress",
    stack,
    projectRoot: "/",
    stateDir: "/",
    installation: TEST_INSTALLATION,
});
const labels = (stack: string, member: string, installation = TEST_INSTALLATION.id) => ({
    "egress-project": "egress",
    "egress-stack": stack,
    "egress-installation": installation,
    "egress-pool": "web",
    "egress-member": member,
});
/** Another installation with a stack `prod` in the same GCP project: nothing of it is ever ours. */
const twin = {
    project: "egress",
    stack: "prod",
    projectRoot: "/",
    stateDir: "/",
    installation: { id: "89abcdef", legacy: false },
};

before(async () => {
    fake = await startFakeCompute("crawl-proxies", TOKEN);
    fake.instances.push(
        { name: "web-0-vm-aaaa", zone: `${P}/zones/europe-west1-b`, labels: labels("prod", "web-0") },
        // A zone no longer in the config: still found, via the aggregated list.
        { name: "web-1-vm-bbbb", zone: `${P}/zones/us-central1-a`, labels: labels("prod", "web-1") },
        { name: "web-0-vm-cccc", zone: `${P}/zones/europe-west1-b`, labels: labels("staging", "web-0") },
        { name: "someone-elses", zone: `${P}/zones/europe-west1-b`, labels: { team: "x" } },
        {
            name: "web-0-vm-eeee",
            zone: `${P}/zones/europe-west1-b`,
            labels: labels("prod", "web-0", twin.installation.id),
        },
    );
    fake.addresses.push({
        name: "web-0-ip-dddd",
        region: `${P}/regions/europe-west1`,
        labels: labels("prod", "web-0"),
    });
    fake.firewalls.push(
        { name: poolResourceName(ctx("prod"), "web"), description: firewallDescription(ctx("prod"), "web") },
        { name: poolResourceName(ctx("staging"), "web"), description: firewallDescription(ctx("staging"), "web") },
        { name: "egress-hand-made", description: "not ours" },
        { name: poolResourceName(twin, "web"), description: firewallDescription(twin, "web") },
        // A rule written before installation ids: no installation in its description, so never collected.
        { name: "egress-prod-web-legacy", description: "managed by egress: project=egress stack=prod pool=web" },
    );
    const { "egress-member": _, ...poolLabels } = labels("prod", "");
    fake.templates.push(
        { name: "egress-prod-web-t0123abcd-aaaaaa", properties: { labels: poolLabels } },
        {
            name: "egress-prod-web-t0123abcd-bbbbbb",
            properties: { labels: { ...poolLabels, "egress-stack": "staging" } },
        },
        { name: "egress-hand-made-template", properties: { labels: {} } },
    );
});
after(() => fake.close());

const collector = () =>
    gcpCollector("gcp-eu", entry, { endpoint: fake.url, accessToken: TOKEN, env: {}, homeDir: "/nonexistent" });

describe("gcp collector", () => {
    it("lists this stack's instances, addresses and firewall rules, and nothing else", async () => {
        const things = await collector().list({ project: "egress", stack: "prod", installation: TEST_INSTALLATION.id });
        assert.deepEqual(
            things.map((t) => [t.type, t.name, t.location, t.pool, t.member ?? null]),
            [
                ["instance", "web-0-vm-aaaa", "europe-west1-b", "web", "web-0"],
                ["instance", "web-1-vm-bbbb", "us-central1-a", "web", "web-1"],
                ["address", "web-0-ip-dddd", "europe-west1", "web", "web-0"],
                ["firewall", poolResourceName(ctx("prod"), "web"), "global", "web", null],
                ["template", "egress-prod-web-t0123abcd-aaaaaa", "global", "web", null],
            ],
        );
        assert.ok(things.every((t) => t.kind === "gcp" && t.provider === "gcp-eu"));
        const agg = fake.requests.find((r) => r.path.endsWith("/aggregated/instances"))!;
        assert.equal(
            agg.query.get("filter"),
            '(labels.egress-project = "egress") AND (labels.egress-stack = "prod") AND (labels.egress-installation = "0a1b2c3d")',
        );
    });

    it("removes each thing, waiting for the operation, and succeeds when it is already gone", async () => {
        const c = collector();
        const things = await c.list({ project: "egress", stack: "prod", installation: TEST_INSTALLATION.id });
        for (const t of things) await c.remove(t);
        assert.deepEqual(await c.list({ project: "egress", stack: "prod", installation: TEST_INSTALLATION.id }), []);
        assert.ok(
            fake.requests.some(
                (r) => r.method === "POST" && /\/zones\/us-central1-a\/operations\/operation-\d+\/wait$/.test(r.path),
            ),
        );
        assert.ok(
            fake.requests.some(
                (r) => r.method === "DELETE" && r.path.endsWith("/regions/europe-west1/addresses/web-0-ip-dddd"),
            ),
        );
        // Again: everything answers 404 now, which counts as removed.
        for (const t of things) await c.remove(t);
        assert.equal(
            (await c.list({ project: "egress", stack: "staging", installation: TEST_INSTALLATION.id })).length,
            3,
        );
        // The twin's instance and rule are still there, and its own gc finds exactly them.
        assert.deepEqual(
            (await c.list({ project: "egress", stack: "prod", installation: twin.installation.id })).map((t) => [
                t.type,
                t.name,
            ]),
            [
                ["instance", "web-0-vm-eeee"],
                ["firewall", poolResourceName(twin, "web")],
            ],
        );
    });

    it("surfaces real failures with the API's message", async () => {
        fake.fail = [
            {
                match: /aggregated\/instances/,
                status: 403,
                reason: "forbidden",
                message: "Required 'compute.instances.list' permission for 'projects/crawl-proxies'",
            },
        ];
        await assert.rejects(
            collector().list({ project: "egress", stack: "prod", installation: TEST_INSTALLATION.id }),
            { name: "GcpApiError", stage: "permissions", message: /HTTP 403: Required 'compute\.instances\.list'/ },
        );
        fake.fail = [];
        await assert.rejects(
            collector().remove({ kind: "gcp", provider: "gcp-eu", type: "volume", name: "x", location: "y" }),
            /cannot remove a `volume`/,
        );
    });
});
