import { after, before, beforeEach, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FakeCompute, startFakeCompute } from "../fixtures/gcp/fake-compute";
import { gcpGoneCheck } from "../../components/gcp/gone";
import { goneCheckFor } from "../../components/registry";
import { parseEgressConfig } from "../../src/config";
import type { GcpProviderConfig } from "../../components/gcp/config";
import { memberLabels, ProxyMember } from "../../src/model";
import { TEST_INSTALLATION } from "../helpers/installation";

const TOKEN = "ya29.test-token";
const B = "europe-west1-b";
const C = "europe-west1-c";
let fake: FakeCompute;
const home = fs.mkdtempSync(path.join(os.tmpdir(), "egress-gone-gcp-"));
const entry = parseEgressConfig(
    {
        providers: {
            "gcp-eu": { type: "gcp", project: "crawl-proxies", zones: [B, C], allowedSourceRanges: ["203.0.113.0/24"] },
        },
    },
    "/",
).providers["gcp-eu"] as GcpProviderConfig;
const ctx = { runDir: home, project: "egress", stack: "dev", installation: TEST_INSTALLATION, entry };
/** Options that never read the developer's real credentials. */
const opts = (extra: Record<string, unknown> = {}) => ({
    endpoint: fake.url,
    env: {},
    homeDir: home,
    accessToken: TOKEN,
    timeoutMs: 2000,
    ...extra,
});

const member = (index: number, zone: string): ProxyMember => ({
    id: `web-${index}`,
    pool: "web",
    provider: "gcp-eu",
    kind: "gcp",
    index,
    host: `203.0.113.${10 + index}`,
    port: 3128,
    url: `http://203.0.113.${10 + index}:3128`,
    zone,
});

/** An instance as gcp-proxy.ts creates it: the member's labels, an autonamed `<name>-vm-…`. */
function instance(id: string, zone: string, status: string, stack = "dev", installation = TEST_INSTALLATION.id) {
    const labels = memberLabels(
        {
            project: "egress",
            stack,
            projectRoot: "/",
            stateDir: "/",
            installation: { id: installation, legacy: false },
        },
        "web",
        id,
    );
    return {
        kind: "compute#instance",
        name: `${id}-vm-${Math.random().toString(16).slice(2, 9)}`,
        zone: `https://www.googleapis.com/compute/v1/projects/crawl-proxies/zones/${zone}`,
        labels,
        status,
    };
}

before(async () => {
    fake = await startFakeCompute("crawl-proxies", TOKEN);
});
after(() => fake.close());
beforeEach(() => {
    fake.instances.length = 0;
    fake.requests.length = 0;
    fake.fail = [];
    fake.pageSize = undefined;
});

/** The map with instance names' random suffixes cut, so it can be compared exactly. */
const plain = (gone: Map<string, string>) =>
    Object.fromEntries([...gone].map(([k, v]) => [k, v.replace(/-vm-[0-9a-f]+/g, "-vm-*")]));

describe("gcp gone hook", () => {
    it("reports stopped, suspended and missing instances across zones, and nothing for running ones", async () => {
        fake.instances.push(
            instance("web-0", B, "RUNNING"),
            instance("web-1", B, "TERMINATED"),
            instance("web-3", C, "STOPPING"),
            instance("web-4", C, "SUSPENDED"),
            // A replacement on its way (create before delete): the running one wins.
            instance("web-5", B, "TERMINATED"),
            instance("web-5", B, "RUNNING"),
            instance("web-6", C, "PROVISIONING"),
            // Another stack's instance for the same member id does not keep web-2 alive.
            instance("web-2", C, "RUNNING", "prod"),
            // ...nor does another installation's instance of a same-named stack.
            instance("web-2", C, "RUNNING", "dev", "89abcdef"),
        );
        const members = [
            member(0, B),
            member(1, B),
            member(2, C),
            member(3, C),
            member(4, C),
            member(5, B),
            member(6, C),
        ];
        const gone = await gcpGoneCheck(ctx, opts())(members);
        assert.deepEqual(plain(gone), {
            "web-1": `instance web-1-vm-* is TERMINATED in zone ${B}`,
            "web-2": `no instance labelled egress-member=web-2 in zone ${C} of project crawl-proxies`,
            "web-3": `instance web-3-vm-* is STOPPING in zone ${C}`,
            "web-4": `instance web-4-vm-* is SUSPENDED in zone ${C}`,
        });
        // One list per zone, by the stack's labels, with the caller's token.
        const lists = fake.requests.filter((r) => r.path.endsWith("/instances"));
        assert.deepEqual(lists.map((r) => r.path).sort(), [
            `/compute/v1/projects/crawl-proxies/zones/${B}/instances`,
            `/compute/v1/projects/crawl-proxies/zones/${C}/instances`,
        ]);
        for (const r of lists) {
            assert.equal(r.query.get("filter"), '(labels.egress-project = "egress") AND (labels.egress-stack = "dev")');
            assert.equal(r.auth, `Bearer ${TOKEN}`);
        }
    });

    it("names every gone status (STOPPED, SUSPENDING, several instances)", async () => {
        fake.instances.push(
            instance("web-0", B, "STOPPED"),
            instance("web-1", C, "SUSPENDING"),
            instance("web-2", B, "TERMINATED"),
            instance("web-2", B, "STOPPED"),
        );
        const gone = await gcpGoneCheck(ctx, opts())([member(0, B), member(1, C), member(2, B)]);
        assert.deepEqual(plain(gone), {
            "web-0": `instance web-0-vm-* is STOPPED in zone ${B}`,
            "web-1": `instance web-1-vm-* is SUSPENDING in zone ${C}`,
            "web-2": `instance web-2-vm-* is TERMINATED in zone ${B}; instance web-2-vm-* is STOPPED in zone ${B}`,
        });
    });

    it("follows nextPageToken: instances on later pages count", async () => {
        fake.pageSize = 2;
        for (let i = 0; i < 5; i++) fake.instances.push(instance(`web-${i}`, B, i === 3 ? "TERMINATED" : "RUNNING"));
        const members = [0, 1, 2, 3, 4, 5].map((i) => member(i, B));
        const gone = await gcpGoneCheck(ctx, opts())(members);
        assert.deepEqual(plain(gone), {
            "web-3": `instance web-3-vm-* is TERMINATED in zone ${B}`,
            "web-5": `no instance labelled egress-member=web-5 in zone ${B} of project crawl-proxies`,
        });
        const pagesOfB = fake.requests
            .filter((r) => r.path.endsWith(`/zones/${B}/instances`))
            .map((r) => r.query.get("pageToken"));
        assert.deepEqual(pagesOfB, [null, "offset-2", "offset-4"]);
    });

    it("a later page that fails silences its zone: a partial list would call the members on the rest gone", async () => {
        fake.pageSize = 1;
        fake.instances.push(
            instance("web-0", B, "RUNNING"),
            instance("web-1", B, "RUNNING"),
            instance("web-2", C, "RUNNING"),
        );
        fake.fail = [
            {
                match: new RegExp(`/zones/${B}/`),
                query: (q) => q.has("pageToken"),
                status: 503,
                message: "Backend Error",
            },
        ];
        const gone = await gcpGoneCheck(ctx, opts())([member(0, B), member(1, B), member(2, C), member(3, C)]);
        assert.deepEqual(plain(gone), {
            "web-3": `no instance labelled egress-member=web-3 in zone ${C} of project crawl-proxies`,
        });
        assert.deepEqual(
            fake.requests.filter((r) => r.path.endsWith(`/zones/${B}/instances`)).map((r) => r.query.get("pageToken")),
            [null, "offset-1"],
        );
    });

    it("says nothing about members that could be in a zone that does not answer", async () => {
        fake.fail = [{ match: new RegExp(`/zones/${C}/`), status: 500, message: "Internal error" }];
        fake.instances.push(instance("web-0", B, "TERMINATED"), instance("web-2", C, "TERMINATED"));
        const members = [
            member(0, B), // in the answering zone: reported
            member(1, B), // missing from the answering zone: reported
            member(2, C), // its zone failed: not reported, though its instance is terminated
            member(3, C), // its zone failed: not reported, though missing
            member(4, ""), // zone unknown: could be in C
            member(5, "us-east1-b"), // a zone the entry no longer lists: could be anywhere
        ];
        const gone = await gcpGoneCheck(ctx, opts())(members);
        assert.deepEqual(plain(gone), {
            "web-0": `instance web-0-vm-* is TERMINATED in zone ${B}`,
            "web-1": `no instance labelled egress-member=web-1 in zone ${B} of project crawl-proxies`,
        });
    });

    it("with every zone answering, a member of unknown zone is looked for in all of them", async () => {
        const gone = await gcpGoneCheck(ctx, opts())([member(4, "")]);
        assert.deepEqual(plain(gone), {
            "web-4": `no instance labelled egress-member=web-4 in zones ${B}, ${C} of project crawl-proxies`,
        });
    });

    it("API down, credentials refused or a hung zone: an empty map, no throw", async () => {
        fake.instances.push(instance("web-0", B, "TERMINATED"));
        const members = [member(0, B), member(1, C)];
        assert.deepEqual(await gcpGoneCheck(ctx, opts({ endpoint: "http://127.0.0.1:9" }))(members), new Map());
        assert.deepEqual(await gcpGoneCheck(ctx, opts({ accessToken: "ya29.expired" }))(members), new Map());
        assert.deepEqual(await gcpGoneCheck(ctx, opts({ accessToken: undefined }))(members), new Map());
        fake.fail = [{ match: /\/instances$/, status: "hang" }];
        const started = Date.now();
        assert.deepEqual(await gcpGoneCheck(ctx, opts({ timeoutMs: 200 }))(members), new Map());
        assert.ok(Date.now() - started < 1500);
        // The caller's signal ends a round too.
        assert.deepEqual(await gcpGoneCheck(ctx, opts())(members, AbortSignal.timeout(100)), new Map());
    });

    it("is the registry's hook for `type: gcp`", () => {
        assert.equal(typeof goneCheckFor(ctx), "function");
    });
});
