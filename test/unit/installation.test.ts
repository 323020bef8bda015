/**
 * The installation identity's pure parts: how a stack's state tells its installation, the identity
 * resource's provider, and the names and labels that carry the id.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { IDENTITY_TYPE, installationInState } from "../../src/engine/installation";
import { identityProvider } from "../../src/installation-resource";
import {
    ForeignInstallationError,
    immutableLabels,
    INSTALLATION_LABEL,
    isInstallationId,
    legacyInstallationId,
    memberLabels,
    ownedBy,
    stackLabels,
} from "../../src/model";
import { installationPrefix } from "../../components/kvm/naming";
import { ownerTag } from "../../components/kvm/base-owner";
import { firewallDescription, parseFirewallDescription, poolResourceName } from "../../components/gcp/names";

const stackRes = { type: "pulumi:pulumi:Stack" };
const providerRes = { type: "pulumi:providers:pulumi-nodejs" };
const identity = (installation: unknown, legacy = false) => ({
    type: IDENTITY_TYPE,
    outputs: { installation, legacy },
});

test("a stack's state tells its installation: recorded, legacy (resources without identity) or new", () => {
    assert.deepEqual(
        installationInState([stackRes, identity("0123abcd"), { type: "egress:kvm:KvmProxy" }], "egress", "prod"),
        { installation: { id: "0123abcd", legacy: false }, source: "recorded" },
    );
    assert.deepEqual(installationInState([stackRes, identity("89abcdef", true)], "egress", "prod"), {
        installation: { id: "89abcdef", legacy: true },
        source: "recorded",
    });
    assert.deepEqual(
        installationInState([stackRes, providerRes, { type: "egress:local:LocalProxy" }], "egress", "prod"),
        { installation: { id: legacyInstallationId("egress", "prod"), legacy: true }, source: "legacy" },
    );
    for (const resources of [
        undefined,
        [],
        [stackRes, providerRes],
        [stackRes, { type: "egress:local:LocalProxy", delete: true }],
    ]) {
        const r = installationInState(resources, "egress", "prod");
        assert.equal(r.source, "new");
        assert.equal(r.installation.legacy, false);
        assert.ok(isInstallationId(r.installation.id), r.installation.id);
    }
    // Fresh ids differ (two installations' first `up`s never agree by accident).
    assert.notEqual(
        installationInState([], "egress", "prod").installation.id,
        installationInState([], "egress", "prod").installation.id,
    );
    // A deleted identity (a destroy in progress) is not the stack's.
    assert.equal(
        installationInState([stackRes, { ...identity("0123abcd"), delete: true }], "egress", "prod").source,
        "new",
    );
});

test("a malformed recorded id is an error naming the stack and the resource, never a guess", () => {
    assert.throws(() => installationInState([identity("not-hex")], "egress", "prod"), {
        message: `stack prod: the state's installation identity (${IDENTITY_TYPE}) has no valid \`installation\` output (got "not-hex"): state was edited; restore it from the backend's history`,
    });
});

test("the legacy id is the hash pre-identity KVM names carry, so adopting it keeps every name", () => {
    // Before ids, KVM names were `egress-<sha256(project \0 stack)[0:8]>-<member>`.
    assert.equal(installationPrefix(legacyInstallationId("egress", "prod")), "egress-ae6426a9-");
    assert.notEqual(legacyInstallationId("egress", "prod"), legacyInstallationId("egress", "prod2"));
    // Upload markers: state from before ids holds (project, stack) and spells the same tag as the adopted id.
    assert.equal(ownerTag({ project: "egress", stack: "prod" }), legacyInstallationId("egress", "prod"));
    assert.equal(ownerTag({ project: "egress", stack: "prod", installation: "0a1b2c3d" }), "0a1b2c3d");
});

test("the identity provider records the first proposal and pins it on every later run", async () => {
    const first = await identityProvider.check!({} as any, { installation: "0123abcd", legacy: false });
    assert.deepEqual(first, { inputs: { installation: "0123abcd", legacy: false } });
    const created = await identityProvider.create!({ installation: "0123abcd", legacy: false });
    assert.deepEqual(created, { id: "0123abcd", outs: { installation: "0123abcd", legacy: false } });
    // A later run proposing another id (a stale read) keeps the recorded one: no diff, no replace.
    const later = await identityProvider.check!(
        { installation: "0123abcd", legacy: false },
        { installation: "ffffffff", legacy: true },
    );
    assert.deepEqual(later.inputs, { installation: "0123abcd", legacy: false });
    assert.deepEqual(await identityProvider.diff!("0123abcd", created.outs, later.inputs as any), { changes: false });
    const bad = await identityProvider.check!({} as any, { installation: "XYZ", legacy: false });
    assert.deepEqual(bad.failures, [
        { property: "installation", reason: 'an installation id is 8 lowercase hex digits, got "XYZ"' },
    ]);
    assert.deepEqual(await identityProvider.read!("0123abcd", created.outs), { id: "0123abcd", props: created.outs });
});

test("labels carry the installation; fields that cannot change in place keep a legacy stack's old labels", () => {
    const owner = { project: "egress", stack: "twin", installation: "0123abcd" };
    assert.deepEqual(stackLabels(owner), {
        "egress-project": "egress",
        "egress-stack": "twin",
        [INSTALLATION_LABEL]: "0123abcd",
    });
    const ctx = (legacy: boolean) => ({
        project: "egress",
        stack: "twin",
        projectRoot: "/",
        stateDir: "/",
        installation: { id: "0123abcd", legacy },
    });
    const labels = memberLabels(ctx(false), "web", "web-0");
    assert.deepEqual(immutableLabels(ctx(false).installation, labels), labels);
    assert.deepEqual(immutableLabels(ctx(true).installation, labels), {
        "egress-project": "egress",
        "egress-stack": "twin",
        "egress-pool": "web",
        "egress-member": "web-0",
    });
});

test("ownership: our id, or (legacy only) no id at all", () => {
    assert.equal(ownedBy("0123abcd", { id: "0123abcd", legacy: false }), true);
    assert.equal(ownedBy("89abcdef", { id: "0123abcd", legacy: false }), false);
    assert.equal(ownedBy(undefined, { id: "0123abcd", legacy: false }), false);
    assert.equal(ownedBy(undefined, { id: "0123abcd", legacy: true }), true);
    assert.equal(ownedBy("89abcdef", { id: "0123abcd", legacy: true }), false);
});

test("GCE pool names: two installations' same-named stacks differ; a legacy stack keeps its old name", () => {
    const ctx = (id: string, legacy = false) => ({
        project: "egress",
        stack: "twin",
        projectRoot: "/",
        stateDir: "/",
        installation: { id, legacy },
    });
    assert.notEqual(poolResourceName(ctx("0123abcd"), "web"), poolResourceName(ctx("89abcdef"), "web"));
    // The pre-identity formula: sha256(project \0 stack \0 pool \0 suffix), 6 hex digits.
    const old = require("node:crypto").createHash("sha256").update("egress\0twin\0web\0").digest("hex").slice(0, 6);
    assert.equal(poolResourceName(ctx(legacyInstallationId("egress", "twin"), true), "web"), `egress-twin-web-${old}`);
    assert.deepEqual(parseFirewallDescription(firewallDescription(ctx("0123abcd"), "web")), {
        project: "egress",
        stack: "twin",
        pool: "web",
        installation: "0123abcd",
    });
    assert.deepEqual(parseFirewallDescription("managed by egress: project=egress stack=twin pool=web"), {
        project: "egress",
        stack: "twin",
        pool: "web",
    });
});

test("a same-named thing of another installation is an error naming both", () => {
    assert.equal(
        new ForeignInstallationError("Deployment egress/web-0", "0123abcd", "89abcdef").message,
        "Deployment egress/web-0 belongs to installation 89abcdef, not to this stack's installation 0123abcd: egress leaves it alone. " +
            "Two installations use the same names here; give one of them another stack name, namespace or host, or remove the thing by hand if it is really garbage",
    );
});
