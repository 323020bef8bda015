import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { parseEgressConfig, problems } from "./config-fixtures";

const parse = (entry: Record<string, unknown>, pools: unknown[] = []) =>
    parseEgressConfig({ providers: { "gcp-eu": { type: "gcp", ...entry } }, pools }, "/");
const auth = { username: "crawler", password: "a-long-random-password" };
const base = { project: "crawl-proxies", zones: ["europe-west1-b"], allowedSourceRanges: ["203.0.113.7/32"] };

describe("gcp provider config", () => {
    it("applies defaults", () => {
        const e = parse(base).providers["gcp-eu"];
        assert.ok(e.type === "gcp");
        assert.deepEqual(
            [e.machineType, e.image, e.spot, e.staticAddress, e.network, e.diskSizeGb],
            ["e2-micro", "ubuntu-os-cloud/ubuntu-2404-lts-amd64", false, false, "default", 10],
        );
    });

    it("requires allowedSourceRanges and refuses an open proxy", () => {
        const { allowedSourceRanges: _, ...noRanges } = base;
        assert.deepEqual(
            problems(() => parse(noRanges)),
            ["egress:providers.gcp-eu.allowedSourceRanges: is required (a list)"],
        );
        assert.deepEqual(
            problems(() => parse({ ...base, allowedSourceRanges: ["0.0.0.0/0"] })),
            [
                "egress:providers.gcp-eu.allowedSourceRanges: must not contain 0.0.0.0/0 or ::/0 (that makes an open proxy)",
            ],
        );
        assert.deepEqual(
            problems(() => parse({ ...base, allowedSourceRanges: ["10.0.0.1"] })),
            ["egress:providers.gcp-eu.allowedSourceRanges[0]: must be a CIDR range such as 203.0.113.7/32"],
        );
    });

    it("names bad zones and project IDs", () => {
        assert.deepEqual(
            problems(() => parse({ ...base, zones: ["europe-west1"] })),
            ["egress:providers.gcp-eu.zones[0]: must be a GCE zone such as europe-west1-b"],
        );
        assert.deepEqual(
            problems(() => parse({ ...base, project: "My Project" })),
            ["egress:providers.gcp-eu.project: must be a GCP project ID (6-30 lower-case letters, digits and '-')"],
        );
    });

    it("refuses a pool placement in a zone the entry does not list", () => {
        assert.deepEqual(
            problems(() =>
                parse(base, [
                    { name: "eu", provider: "gcp-eu", auth, replicas: 1, placement: { zone: "us-central1-a" } },
                ]),
            ),
            ["egress:pools[0].placement.zone: must be one of this provider's zones (europe-west1-b)"],
        );
    });

    it("refuses placement.image, naming the provider field to set instead; placement.machineType is allowed", () => {
        assert.deepEqual(
            problems(() =>
                parse(base, [
                    { name: "img", provider: "gcp-eu", auth, replicas: 1, placement: { image: "debian-13" } },
                ]),
            ),
            ["egress:pools[0].placement.image: is not used by gcp providers (set `image` on the provider entry)"],
        );
        assert.deepEqual(
            problems(() =>
                parse(base, [
                    {
                        name: "img",
                        provider: "gcp-eu",
                        auth,
                        replicas: 2,
                        members: [{ index: 1, placement: { image: "debian-13" } }],
                    },
                ]),
            ),
            [
                "egress:pools[0].members[0].placement.image: is not used by gcp providers (set `image` on the provider entry)",
            ],
        );
        const cfg = parse(base, [
            { name: "big", provider: "gcp-eu", auth, replicas: 1, placement: { machineType: "e2-small" } },
        ]);
        assert.equal(cfg.pools[0].placement.machineType, "e2-small");
    });

    it("requires `auth` on gcp pools (public addresses), saying how to set the password as a secret", () => {
        assert.deepEqual(
            problems(() => parse(base, [{ name: "eu", provider: "gcp-eu", replicas: 1 }])),
            [
                `egress:pools[0].auth: is required for gcp pools (their proxies have public addresses): set \`auth.username\` and \`auth.password\`, the password as a secret, e.g. pulumi config set --secret --path 'egress:pools[0].auth.password' "$(openssl rand -base64 24)"`,
            ],
        );
        const cfg = parse(base, [
            {
                name: "eu",
                provider: "gcp-eu",
                replicas: 1,
                auth: { username: "crawler", password: { secure: "v1:abc" } },
            },
        ]);
        assert.deepEqual(cfg.pools[0].auth, { username: "crawler", password: { secure: "v1:abc" } });
    });
});
