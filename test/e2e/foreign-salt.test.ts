/**
 * A stack file that carries another machine's passphrase salt, on the real engine: with nothing to
 * protect (no secret in the file, no state here) the salt is dropped with a note and the command works;
 * otherwise the command stops with exit 3, says what to do, and changes nothing.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { cli, procProject, ProcProject } from "../helpers/processes";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 2 }],
};
const projects: ProcProject[] = [];
const project = (passphrase: string) => {
    const p = procProject("salty", config, { PULUMI_CONFIG_PASSPHRASE: passphrase });
    projects.push(p);
    return p;
};
const stackFile = (p: ProcProject) => path.join(p.dir, "stacks", "Pulumi.salty.yaml");
const saltOf = (p: ProcProject) => /^encryptionsalt: (.*)$/m.exec(fs.readFileSync(stackFile(p), "utf8"))?.[1];
after(() => {
    for (const p of projects) {
        cli(p, ["destroy", "--yes", "--quiet"]);
        p.cleanup();
    }
});

// Another machine: its preview creates the stack, and Pulumi writes that machine's salt into the file.
const other = project("the other machine's passphrase");
let foreign: string;

test("the other machine's run leaves its salt in the stack file", { timeout: 120_000 }, () => {
    const r = cli(other, ["preview"]);
    assert.equal(r.code, 0, r.stderr);
    foreign = saltOf(other)!;
    assert.match(foreign, /^v1:/);
});

test(
    "no secrets, no state here: the foreign salt is dropped with a note, the up works, this machine's salt replaces it",
    { timeout: 180_000 },
    () => {
        const p = project("this machine's passphrase");
        fs.writeFileSync(stackFile(p), fs.readFileSync(stackFile(other)));
        const r = cli(p, ["up"]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(
            r.stderr,
            /note: stacks\/Pulumi\.salty\.yaml carried an encryptionsalt made with another passphrase; the stack has no secrets and no state here, so the salt was dropped/,
        );
        const mine = saltOf(p);
        assert.ok(mine && mine !== foreign, `a new salt (${mine})`);
        const out = cli(p, ["--json", "outputs"]);
        assert.equal(JSON.parse(out.stdout).proxies.length, 1);
    },
);

test("state here: exit 3 naming the file and the ways out; the file is left as it was", { timeout: 180_000 }, (t) => {
    const p = project("this machine's passphrase");
    assert.equal(cli(p, ["up"]).code, 0);
    const good = fs.readFileSync(stackFile(p), "utf8");
    const withForeign = good.replace(/^encryptionsalt: .*$/m, `encryptionsalt: ${foreign}`);
    fs.writeFileSync(stackFile(p), withForeign);
    // The after hook's destroy needs this machine's salt back, whatever this test's outcome.
    t.after(() => fs.writeFileSync(stackFile(p), good));
    const r = cli(p, ["up"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(
        r.stderr,
        /error: the secrets passphrase in use cannot open the encryptionsalt in \S*stacks\/Pulumi\.salty\.yaml .*Set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE to the passphrase that made it/,
    );
    assert.equal(fs.readFileSync(stackFile(p), "utf8"), withForeign);
    const json = cli(p, ["--json", "up"]);
    assert.equal(json.code, 3);
    assert.equal(JSON.parse(json.stdout.trim().split("\n").pop()!).error.type, "PassphraseMismatchError");
});

test(
    "a stack file that lost its salt (re-made from a seed) takes the one its state holds",
    { timeout: 180_000 },
    () => {
        const p = project("this machine's passphrase");
        assert.equal(cli(p, ["up"]).code, 0);
        const own = saltOf(p)!;
        fs.writeFileSync(stackFile(p), fs.readFileSync(stackFile(p), "utf8").replace(/^encryptionsalt: .*\n/m, ""));
        const r = cli(p, ["up"]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(saltOf(p), own, "the state's salt, not a new one");
    },
);

test("a secure value in the file: exit 3 even without state, the file untouched", { timeout: 120_000 }, () => {
    const p = project("this machine's passphrase");
    const text = `${fs.readFileSync(stackFile(other), "utf8")}`.replace(
        "config:\n",
        "config:\n  extra:note:\n    secure: v1:AAAAAAAAAAAAAAAA:BBBBBBBB\n",
    );
    fs.writeFileSync(stackFile(p), text);
    const r = cli(p, ["up"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /cannot open the encryptionsalt/);
    assert.equal(fs.readFileSync(stackFile(p), "utf8"), text);
});
