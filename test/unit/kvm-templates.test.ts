/**
 * A KVM pool's member templates (components/kvm/pool-templates.ts) exist for every member shape on every
 * host of its zone whatever its replica count, as its base images do: a scale is a targeted `up` of the
 * members it adds, which could not create a template they need. Run under mocks through the real program.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { installMocks, ofType, settle, valueOf } from "../helpers/pulumi-mocks";
import { parseEgressConfig } from "../../src/config";
import { possiblePlans } from "../../src/model";
import { TEST_INSTALLATION } from "../helpers/installation";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-templates-"));
after(() => fs.rmSync(root, { recursive: true, force: true }));
let createProgram: typeof import("../../src/program").createProgram;
const T = (t: string) => `pulumi-nodejs:dynamic/egress:kvm:${t}`;

before(async () => {
    await installMocks("egress", "tpl");
    ({ createProgram } = await import("../../src/program"));
});

const host = (name: string) => ({ name, address: `10.0.0.${name.length}`, bridge: "br0", zone: "z" });
const config = parseEgressConfig(
    {
        providers: {
            lab: {
                type: "kvm",
                ssh: { user: "root", privateKeyPath: "/k", knownHosts: "10.0.0.2 ssh-ed25519 AAAA" },
                hosts: [host("h1"), host("h22")],
                images: { deb: { url: "https://x/d.qcow2", sha256: "a".repeat(64), format: "qcow2" } },
                machineTypes: { small: { vcpu: 1, memoryMiB: 512 } },
            },
        },
        pools: [
            {
                name: "web",
                provider: "lab",
                replicas: 1,
                maxReplicas: 8,
                port: 3128,
                placement: { zone: "z" },
                members: [{ index: 3, port: 8080 }],
            },
        ],
    },
    root,
);

test("possiblePlans: one member without an override, and each override", () => {
    const plans = possiblePlans(config.pools[0]);
    assert.deepEqual(
        plans.map((p) => [p.name, p.port]),
        [
            ["web-0", 3128],
            ["web-3", 8080],
        ],
    );
    const all = possiblePlans({ ...config.pools[0], members: [{ index: 0, port: 9000 }] } as any);
    assert.deepEqual(
        all.map((p) => [p.name, p.port]),
        [
            ["web-1", 3128],
            ["web-0", 9000],
        ],
    );
});

test("a pool of one member on two hosts has the templates of both shapes on both hosts", async () => {
    const outputs = await createProgram({
        projectRoot: root,
        stateDir: path.join(root, "run"),
        config,
        installation: () => TEST_INSTALLATION,
    })();
    await valueOf(outputs.proxies);
    await settle();
    const templates = ofType(T("Template"));
    const where = templates.map((t) => `${t.inputs.at.host} ${t.inputs.volume}`).sort();
    assert.equal(templates.length, 4, where.join("\n"));
    assert.equal(new Set(templates.map((t) => t.inputs.volume)).size, 2, "two contents (3128, 8080)");
    assert.deepEqual(new Set(templates.map((t) => t.inputs.at.host)), new Set(["h1", "h22"]));
    const members = ofType(T("Member"));
    assert.equal(members.length, 1);
    assert.ok(
        templates.some((t) => t.inputs.volume === members[0].inputs.member.tpl && t.inputs.at.host === "h1"),
        "web-0 (on h1) names one of them",
    );
    for (const t of templates) {
        const content = JSON.parse(t.inputs.content);
        assert.equal(content.storagePool, "default");
        assert.equal(content.base.volume, "base-lab-deb.qcow2");
    }
});
