/**
 * What a new clone gets: no tracked stack file carries a passphrase salt (a salt only opens with the
 * passphrase of the machine that made it, so a committed one breaks `npm start` everywhere else), the
 * dev seed is what the README promises, and the dev stack file a run writes is git-ignored. Plus the
 * seeding itself (src/config/seed.ts) and the salt rules (src/engine/salt.ts).
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { PACKAGE_ROOT, dropSalt, saltIsDisposable, checkpointDir } from "../../src/engine";
import { ensureStackFile, loadStackConfig, seedFile, stackFile } from "../../src/config";

const git = (...args: string[]) => cp.execFileSync("git", ["-C", PACKAGE_ROOT, ...args], { encoding: "utf8" });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "egress-stack-files-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe("tracked stack files", () => {
    const tracked = git("ls-files", "stacks")
        .split("\n")
        .filter((f) => f.endsWith(".yaml"));

    it("are found (this must run in a git checkout)", () => {
        assert.ok(tracked.includes("stacks/seeds/dev.yaml"), tracked.join(", "));
    });

    it("carry no encryptionsalt, encryptedkey or secretsprovider (they belong to a machine's passphrase)", () => {
        for (const f of tracked) {
            const text = fs.readFileSync(path.join(PACKAGE_ROOT, f), "utf8");
            assert.doesNotMatch(
                text,
                /^(encryptionsalt|encryptedkey|secretsprovider):/m,
                `${f} carries a machine's secrets-manager line`,
            );
        }
    });

    it("the machine's dev stack file is git-ignored, and not tracked", () => {
        assert.equal(tracked.includes("stacks/Pulumi.dev.yaml"), false);
        assert.equal(git("check-ignore", "stacks/Pulumi.dev.yaml").trim(), "stacks/Pulumi.dev.yaml");
    });

    it("the dev seed is what the README promises: one pool on the local provider with its proxy count", () => {
        const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
        const m = /serves the `dev` stack \(local provider, (\d+) proxies\)/.exec(readme);
        assert.ok(m, "the README's quick start names the dev stack's provider and count");
        const doc = YAML.parse(fs.readFileSync(seedFile(PACKAGE_ROOT, "dev"), "utf8"));
        assert.deepEqual(doc.config["egress:providers"], { local: { type: "local" } });
        assert.deepEqual(
            doc.config["egress:pools"].map((p: any) => [p.name, p.provider, p.replicas]),
            [["dev", "local", Number(m[1])]],
        );
        assert.deepEqual(Object.keys(doc), ["config"], "nothing but config");
    });
});

describe("seeding a stack file", () => {
    const project = (name: string) => {
        const dir = path.join(tmp, name);
        fs.mkdirSync(path.join(dir, "stacks", "seeds"), { recursive: true });
        fs.copyFileSync(seedFile(PACKAGE_ROOT, "dev"), seedFile(dir, "dev"));
        return dir;
    };

    it("a missing file is made from its seed, byte for byte, and says so", () => {
        const dir = project("fresh");
        assert.match(
            ensureStackFile(dir, "dev") ?? "",
            /^created stacks\/Pulumi\.dev\.yaml from stacks\/seeds\/dev\.yaml/,
        );
        assert.deepEqual(fs.readFileSync(stackFile(dir, "dev")), fs.readFileSync(seedFile(dir, "dev")));
        assert.equal(loadStackConfig(dir, "dev").pools[0].replicas, 3);
        assert.deepEqual(
            fs.readdirSync(path.join(dir, "stacks")).sort(),
            ["Pulumi.dev.yaml", "seeds"],
            "no temporary file left",
        );
    });

    it("an existing file is never overwritten (a scaled or salted copy stays as it is)", () => {
        const dir = project("kept");
        fs.writeFileSync(stackFile(dir, "dev"), "config: {}\nencryptionsalt: v1:abc\n");
        assert.equal(ensureStackFile(dir, "dev"), undefined);
        assert.equal(fs.readFileSync(stackFile(dir, "dev"), "utf8"), "config: {}\nencryptionsalt: v1:abc\n");
    });

    it("a stack without a seed is left to its author", () => {
        const dir = project("noseed");
        assert.equal(ensureStackFile(dir, "prod"), undefined);
        assert.equal(fs.existsSync(stackFile(dir, "prod")), false);
        assert.throws(
            () => loadStackConfig(dir, "prod"),
            /stack file not found; create it \(examples: stacks\/Pulumi\.example-\*\.yaml, stacks\/seeds\/dev\.yaml\)/,
        );
    });
});

describe("a salt that protects nothing", () => {
    const file = path.join(tmp, "Pulumi.s.yaml");
    const backend = path.join(tmp, "backend");

    it("is disposable without secure values and without state; otherwise not", () => {
        fs.writeFileSync(file, "config:\n  egress:pools: []\nencryptionsalt: v1:abc:v1:def:ghi\n");
        assert.equal(saltIsDisposable(file, backend, "s"), true, "no backend directory yet");
        assert.equal(saltIsDisposable(file, undefined, "s"), false, "a backend that is not a file backend");
        fs.mkdirSync(checkpointDir(backend), { recursive: true });
        fs.writeFileSync(path.join(checkpointDir(backend), "other.json"), "{}");
        assert.equal(saltIsDisposable(file, backend, "s"), true, "state of another stack only");
        fs.writeFileSync(path.join(checkpointDir(backend), "s.json"), "{}");
        assert.equal(saltIsDisposable(file, backend, "s"), false, "the stack has state here");
        fs.rmSync(path.join(checkpointDir(backend), "s.json"));
        fs.writeFileSync(file, "config:\n  egress:x:\n    secure: AAAA\nencryptionsalt: v1:abc\n");
        assert.equal(saltIsDisposable(file, backend, "s"), false, "a secure value");
    });

    it("dropSalt removes only the salt line", () => {
        fs.writeFileSync(file, "# keep me\nconfig:\n  egress:pools: []\nencryptionsalt: v1:abc:v1:def:ghi\n");
        dropSalt(file);
        assert.equal(fs.readFileSync(file, "utf8"), "# keep me\nconfig:\n  egress:pools: []\n");
    });
});
