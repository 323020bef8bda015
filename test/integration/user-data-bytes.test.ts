/**
 * Binary user-data (gzip, which cloud-init accepts) reaches every kind byte for byte: the program is run
 * under mocks with the KVM sample stack's shape and a gzip cloud-init file, and the member template it
 * produces (the seed's part) is built into a real NoCloud ISO with xorriso and read back; GCE gets base64 with
 * `user-data-encoding`; a pod's squid.conf is read from the gunzipped document.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import YAML from "yaml";
import { ensureTestPackages } from "../helpers/deps";
import { installMocks, isSecret, ofType, settle, valueOf } from "../helpers/pulumi-mocks";
import { decodeUserData } from "../../src/model";
import { parseEgressConfig } from "../../src/config";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { buildSeedIso } from "../../components/kvm/seed-iso";
import { memberSquidConf } from "../../components/kubernetes/squid-config";
import { TEST_INSTALLATION } from "../helpers/installation";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-user-data-"));
const TEXT =
    "#cloud-config\npackages: [squid]\nwrite_files:\n  - path: /etc/squid/squid.conf\n    content: |\n      http_port 8080\n      http_access allow localnet\n";
// mtime 0 and no name: the gzip bytes are the same on every run.
const GZIP = zlib.gzipSync(Buffer.from(TEXT), { level: 9 });
let createProgram: typeof import("../../src/program").createProgram;

before(async () => {
    fs.writeFileSync(path.join(root, "squid.yaml.gz"), GZIP);
    await installMocks("egress", "bytes");
    ({ createProgram } = await import("../../src/program"));
});

/** The shipped KVM sample, one pool member of it on the gzip file, plus a GCE pool on the same file. */
function config() {
    const sample = YAML.parse(
        fs.readFileSync(path.join(PACKAGE_ROOT, "stacks", "Pulumi.example-kvm.yaml"), "utf8"),
    ).config;
    const kvmPool = {
        ...sample["egress:pools"][0],
        replicas: 2,
        members: [{ index: 1, port: 8080, cloudInit: { file: "squid.yaml.gz" } }],
    };
    // The sample's shared file lives in the package, this test's project root is a temp dir.
    fs.mkdirSync(path.join(root, "cloud-init"), { recursive: true });
    fs.copyFileSync(path.join(PACKAGE_ROOT, "cloud-init", "squid.yaml"), path.join(root, "cloud-init", "squid.yaml"));
    return parseEgressConfig(
        {
            providers: {
                ...sample["egress:providers"],
                "gcp-eu": {
                    type: "gcp",
                    project: "crawl-proxies",
                    zones: ["europe-west1-b"],
                    allowedSourceRanges: ["203.0.113.0/24"],
                },
            },
            pools: [
                kvmPool,
                {
                    name: "eu",
                    provider: "gcp-eu",
                    replicas: 1,
                    port: 8080,
                    cloudInit: { file: "squid.yaml.gz" },
                    auth: { username: "crawler", password: "test-password-0123" },
                },
            ],
        },
        root,
    );
}

test(
    "a gzip user-data file goes into the KVM seed ISO byte for byte (built with xorriso, read back)",
    { timeout: 60_000 },
    async () => {
        ensureTestPackages(); // xorriso
        const outputs = await createProgram({
            projectRoot: root,
            stateDir: path.join(root, "run"),
            config: config(),
            installation: () => TEST_INSTALLATION,
        })();
        await valueOf(outputs.proxies);
        await settle();
        // One template per content (member-template.ts): the pool's text file, and member 1's gzip one.
        const templates = ofType("pulumi-nodejs:dynamic/egress:kvm:Template");
        assert.equal(templates.length, 2, templates.map((t) => t.name).join(", "));
        const seedOf = (t: (typeof templates)[number]) => JSON.parse(t.inputs.content).seed;
        const text = templates.map(seedOf).find((x) => x.userDataEncoding === undefined);
        const gz = templates.map(seedOf).find((x) => x.userDataEncoding === "base64");
        assert.ok(text && gz, JSON.stringify(templates.map(seedOf)));
        assert.equal(text.userData, fs.readFileSync(path.join(PACKAGE_ROOT, "cloud-init", "squid.yaml"), "utf8"));
        for (const t of templates) {
            assert.ok(isSecret(t.raw.content), "user-data stays a secret");
            assert.ok(!JSON.stringify(t.raw).includes(TEXT.slice(0, 20)), "nothing of the document in clear");
        }

        const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-seed-iso-"));
        try {
            const bytes = decodeUserData({ userData: gz.userData, encoding: gz.userDataEncoding });
            const iso = await buildSeedIso(
                { userData: bytes, instanceId: "i-1", hostname: "home-1", installGuestAgent: gz.installGuestAgent },
                work,
            );
            const out = path.join(work, "user-data.read");
            cp.execFileSync("xorriso", ["-osirrox", "on", "-indev", iso, "-extract", "/user-data", out], {
                stdio: "ignore",
            });
            assert.deepEqual(fs.readFileSync(out), GZIP, "user-data in the ISO equals the gzip file byte for byte");
        } finally {
            fs.rmSync(work, { recursive: true, force: true });
        }
    },
);

test("GCE metadata carries binary user-data as base64 with user-data-encoding (a metadata value is a string)", async () => {
    const member = ofType("pulumi-nodejs:dynamic/egress:gcp:Member", "eu-0")[0];
    assert.ok(member, "the GCE member was built by the first test's program run");
    // Its user-data is its template's (components/gcp/pool-templates.ts).
    const vm = ofType("gcp:compute/instanceTemplate:InstanceTemplate").find(
        (t) => t.inputs.name === member.inputs.member.tpl,
    )!;
    assert.equal(vm.inputs.metadata["user-data-encoding"], "base64");
    assert.deepEqual(Buffer.from(vm.inputs.metadata["user-data"], "base64"), GZIP);
    assert.ok(isSecret(vm.raw.metadata), "user-data is a secret");
});

test("a pod's squid.conf is read from gzip cloud-init gunzipped", () => {
    assert.equal(
        memberSquidConf({ port: 8080, cloudInit: { file: "squid.yaml.gz" } }, root),
        "http_port 8080\nhttp_access allow localnet\n",
    );
});
