/**
 * GCE members through the real engine: each an `egress:gcp:Member` (components/gcp/member-provider.ts)
 * run by the engine's dynamic-provider process against the Compute stand-in, the gcp provider's own
 * resources (provider, firewall, templates) stood in for (test/helpers/gcp-stand-in.ts: no gcp plugin can
 * run here). A pool of 3 spread over shard stacks of 2: up, a targeted scale to 5, a heal of a stopped
 * instance (refresh, replace: the new instance first, then the old one goes), `egress gc`'s instance list
 * all known to state, and destroy leaving no instance.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { replaceTargeted } from "../../src/fleet-ops/replace";
import { tempProject } from "../helpers/project";
import { GCP_PROJECT, installGcpStandIn } from "../helpers/gcp-stand-in";
import type { FakeCompute } from "../fixtures/gcp/fake-compute";
import { gcpCollector } from "../../components/gcp/gc";
import { knownToState } from "../../src/gc";
import type { GcpProviderConfig } from "../../components/gcp/config";

const ENTRY = { type: "gcp", project: GCP_PROJECT, zones: ["europe-west1-b"], allowedSourceRanges: ["203.0.113.0/24"] };
const AUTH = { username: "crawler", password: "gcp-members-password-0123" };
const p = tempProject("gm", {
    "egress:providers": { eu: ENTRY },
    "egress:pools": [{ name: "web", provider: "eu", replicas: 3, maxReplicas: 10, membersPerStack: 2, auth: AUTH }],
});
let fake: FakeCompute;
before(async () => {
    fake = await installGcpStandIn();
});
after(async () => {
    await p.driver.destroy().catch(() => undefined);
    await fake?.close();
    p.cleanup();
});

/** The running instances by member, from the stand-in. */
function instancesByMember(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const i of fake.instances.filter((x) => x.status === "RUNNING"))
        (out[i.labels["egress-member"]] ??= []).push(i.name);
    return out;
}

/** The members every stack lists, merged (src/engine/fleet-driver.ts). */
const proxies = () => p.driver.proxies();

test("up makes one instance per member from its template, over the installation's stack and a shard", async () => {
    await p.driver.up({ refresh: false });
    const byMember = instancesByMember();
    assert.deepEqual(Object.keys(byMember).sort(), ["web-0", "web-1", "web-2"]);
    const listed = await proxies();
    assert.deepEqual(
        listed.map((m) => [m.id, m.zone]),
        [
            ["web-0", "europe-west1-b"],
            ["web-1", "europe-west1-b"],
            ["web-2", "europe-west1-b"],
        ],
    );
    for (const m of listed) {
        const made = fake.instances.find((i) => i.name === byMember[m.id][0]);
        assert.equal(
            m.host,
            made.networkInterfaces[0].accessConfigs[0].natIP,
            `${m.id}'s host is its instance's address`,
        );
        // The shard's member is made from the shard's own template.
        assert.match(made.sourceInstanceTemplate, m.id === "web-2" ? /-s1-[0-9a-f]{6}$/ : /-t[0-9a-f]{8}-[0-9a-f]{6}$/);
    }
});

test("a scale targets the members it adds; a stopped instance is healed by a new one, and the old goes", async () => {
    p.driver.setPoolCounts({ web: 5 });
    const target = await p.driver.countTargets({ web: 5 });
    assert.ok(target, "a count change names its targets");
    await p.driver.up({ refresh: false, target, targetDependents: true });
    assert.deepEqual(Object.keys(instancesByMember()).sort(), ["web-0", "web-1", "web-2", "web-3", "web-4"]);

    const [old] = instancesByMember()["web-3"];
    fake.instances.find((i) => i.name === old).status = "TERMINATED";
    await replaceTargeted(p.driver, ["web-3"], pino({ level: "silent" }), { refresh: true });
    const now = instancesByMember()["web-3"];
    assert.equal(now.length, 1);
    assert.notEqual(now[0], old, "a new instance serves web-3");
    assert.ok(!fake.instances.some((i) => i.name === old), "the stopped one was deleted");
    assert.equal((await proxies()).length, 5);
});

test("every instance egress gc lists is known to state; destroy leaves none", async () => {
    const stateIds = new Set((await p.driver.resources()).map((r) => r.id).filter((id): id is string => !!id));
    const listed = await gcpCollector("eu", ENTRY as GcpProviderConfig).list({
        project: "egress",
        stack: "gm",
        installation: (await p.driver.installation()).installation.id,
    });
    const instances = listed.filter((t) => t.type === "instance");
    assert.equal(instances.length, 5);
    assert.deepEqual(
        instances.filter((t) => !knownToState(t, stateIds)).map((t) => t.name),
        [],
    );
    p.driver.setPoolCounts({});
    await p.driver.destroy();
    assert.deepEqual(fake.instances, []);
});
