/**
 * What replicas of one stack must share (src/state/cluster/scope.ts): one EGRESS_HOME for a file
 * backend or `local` pools, else the same stack config, whatever its key order, replica counts or
 * encryption salt.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { backendOfUrl } from "../../src/engine";
import { configFingerprint, replicaScope } from "../../src/state/cluster/scope";

const PG = backendOfUrl("postgres://egress:secret@db.internal:5432/egress");

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A project directory with `stacks/Pulumi.s.yaml` holding `doc` (removed after the tests). */
function project(doc: object): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-scope-"));
    dirs.push(dir);
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.writeFileSync(path.join(dir, "stacks", "Pulumi.s.yaml"), YAML.stringify(doc));
    return dir;
}
const staticConfig = (replicas: number) => ({
    "egress:providers": { byo: { type: "static", proxies: ["http://10.0.0.1:3128", "http://10.0.0.2:3128"] } },
    "egress:pools": [{ name: "byo", provider: "byo", replicas }],
});

test("a shared backend without local pools: the scope is the stack config's", () => {
    const dir = project({ config: staticConfig(2) });
    const s = replicaScope({ projectRoot: dir, stack: "s", homeId: "h1", backend: PG });
    assert.match(s.id, /^config:[0-9a-f]{16}$/);
    assert.equal(s.oneHome, undefined);
    const again = replicaScope({
        projectRoot: project({ config: staticConfig(2), encryptionsalt: "v1:x" }),
        stack: "s",
        homeId: "h2",
        backend: PG,
    });
    assert.equal(again.id, s.id, "another home with the same config (and a salt) has the same scope");
});

test("a file backend, `local` pools or an unreadable stack file keep the replicas in one home", () => {
    const file = replicaScope({
        projectRoot: project({ config: staticConfig(2) }),
        stack: "s",
        homeId: "h1",
        backend: backendOfUrl("file:///var/lib/egress"),
    });
    assert.equal(file.id, "h1");
    assert.match(file.oneHome!, /file backend/);
    const local = project({
        config: {
            "egress:providers": { l: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "l", replicas: 1 }],
        },
    });
    const l = replicaScope({ projectRoot: local, stack: "s", homeId: "h1", backend: PG });
    assert.equal(l.id, "h1");
    assert.match(l.oneHome!, /"web".*processes of one host/);
    const missing = replicaScope({ projectRoot: os.tmpdir(), stack: "no-such-stack", homeId: "h1", backend: PG });
    assert.deepEqual(missing, { id: "h1", oneHome: "its stack file cannot be read" });
});

test("the fingerprint ignores replica counts and key order, not the config or the backend", () => {
    const base = configFingerprint({ config: staticConfig(2) }, PG.shown);
    const reordered = {
        config: {
            "egress:pools": staticConfig(2)["egress:pools"],
            "egress:providers": staticConfig(2)["egress:providers"],
        },
    };
    assert.equal(configFingerprint(reordered, PG.shown), base);
    const scaled = { config: { ...staticConfig(2), "egress:pools": [{ replicas: 9, provider: "byo", name: "byo" }] } };
    assert.equal(configFingerprint(scaled, PG.shown), base);
    const zoned = structuredClone(staticConfig(2)) as any;
    zoned["egress:pools"][0].zones = ["a"];
    assert.notEqual(configFingerprint({ config: zoned }, PG.shown), base);
    assert.notEqual(
        configFingerprint(
            { config: staticConfig(2) },
            backendOfUrl("postgres://egress:secret@other:5432/egress").shown,
        ),
        base,
    );
    assert.equal(
        configFingerprint(
            { config: staticConfig(2) },
            backendOfUrl("postgres://egress:changed@db.internal:5432/egress").shown,
        ),
        base,
        "the password is not part of it",
    );
});
