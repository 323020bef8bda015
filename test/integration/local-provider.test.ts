/**
 * The LocalProxy dynamic provider, loaded in a fresh process from the text its resources keep in state
 * (components/shared/dynamic.ts), as the engine's dynamic-provider process loads it: create starts a real proxy, read sees it, diff asks for replacement once it is dead,
 * delete stops it and removes its files, and a second delete is fine.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LOCAL_PROCESS_TYPE } from "../../components/local/provider";
import { providerLoader } from "../../components/shared/dynamic";
import { undoLocalCreate } from "../../components/local/recover";
import { isOurProcess } from "../../components/local/process";
import { runSerialized } from "../helpers/serialized-provider";
import { getViaProxy, proxyBasicAuth, requestViaProxy, startTargetServer } from "../helpers/net";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { TEST_INSTALLATION } from "../helpers/installation";

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-local-"));
const inputs = {
    member: "unit-web-0",
    requestedPort: 0,
    stateDir,
    installation: TEST_INSTALLATION,
};
let target: Awaited<ReturnType<typeof startTargetServer>>;
before(async () => (target = await startTargetServer()));
after(async () => {
    await target.close();
    fs.rmSync(stateDir, { recursive: true, force: true });
});

test("state holds a loader of the provider, not its code: no path, a hundred bytes or so", () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    assert.ok(!text.includes(PACKAGE_ROOT) && !text.includes(stateDir), "no machine path baked in");
    assert.match(text, /^exports\.handler=/);
    assert.ok(text.length < 200, `${text.length} bytes`);
});

test("create → read → (proxy serves) → delete → read → diff → delete again, through the serialized provider", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    const [created, read1] = runSerialized(text, [
        { method: "create", args: [inputs] },
        { method: "read", args: ["$id", "$outs"] },
    ]) as any[];
    assert.equal(created.id, "unit-web-0", "the id is the member name: recovery finds a crashed create by it");
    assert.equal(created.outs.host, "127.0.0.1");
    assert.ok(created.outs.port > 0 && created.outs.pid > 0);
    assert.equal(read1.props.running, true);
    // The process outlived the provider process that started it.
    const via = await getViaProxy(created.outs.port, `http://127.0.0.1:${target.port}/x`);
    assert.deepEqual(via, { status: 200, body: "hello /x" });

    const [deleted, read2, diff, again] = runSerialized(text, [
        { method: "delete", args: [created.id, created.outs] },
        { method: "read", args: [created.id, created.outs] },
        { method: "diff", args: [created.id, { ...created.outs, running: false }, inputs] },
        { method: "delete", args: [created.id, created.outs] },
    ]) as any[];
    assert.equal(deleted, null);
    assert.equal(read2.props.running, false, "read notices the dead process");
    assert.deepEqual(diff.replaces, ["running"]);
    assert.equal(again, null, "deleting what is gone succeeds");
    assert.deepEqual(fs.readdirSync(stateDir), [], "no pid or log files left");
    await assert.rejects(getViaProxy(created.outs.port, `http://127.0.0.1:${target.port}/x`, 1000));
});

test("state from before issue 33 (the script's and node's paths among the inputs): updated in place, the paths dropped", () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    const olds = {
        ...inputs,
        serverScript: path.join(PACKAGE_ROOT, "dist", "kinds", "local", "proxy-server.js"),
        nodePath: process.execPath,
        pid: process.pid,
        port: 1,
        host: "127.0.0.1",
        running: true,
    };
    const [diff, updated, same] = runSerialized(text, [
        { method: "diff", args: ["unit-web-0", olds, inputs] },
        { method: "update", args: ["unit-web-0", olds, inputs] },
        {
            method: "diff",
            args: ["unit-web-0", { ...inputs, pid: process.pid, port: 1, host: "127.0.0.1", running: true }, inputs],
        },
    ]) as any[];
    assert.deepEqual([diff.changes, diff.replaces], [true, []], "an update, never a replace");
    assert.deepEqual(Object.keys(updated.outs).sort(), [
        "host",
        "installation",
        "member",
        "pid",
        "port",
        "requestedPort",
        "running",
        "stateDir",
    ]);
    assert.equal(same.changes, false, "once dropped, nothing to change");
});

test("read does not mistake a foreign process on the old pid for the proxy", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    const [r] = runSerialized(text, [
        {
            method: "read",
            args: [
                "unit-web-9-deadbeef",
                { ...inputs, pid: process.pid, port: target.port, host: "127.0.0.1", running: true },
            ],
        },
    ]) as any[];
    assert.equal(r.props.running, false);
});

test("create fails cleanly when the port is taken, leaving nothing behind", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    assert.throws(
        () => runSerialized(text, [{ method: "create", args: [{ ...inputs, requestedPort: target.port }] }]),
        /did not start listening on port \d+: exited with 1/,
    );
    assert.deepEqual(
        fs.readdirSync(stateDir).filter((f) => f.endsWith(".json")),
        [],
    );
});

test("the proxy process gets an allow-listed environment: nothing of the engine's (tokens, Pulumi settings)", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    const canary = `canary-${process.pid}-${Date.now()}`;
    process.env.EGRESS_TOKENS = `admin:admin:${canary}`;
    process.env.PULUMI_CONFIG_PASSPHRASE = canary;
    try {
        const [created] = runSerialized(text, [{ method: "create", args: [inputs] }]) as any[];
        const environ = fs.readFileSync(`/proc/${created.outs.pid}/environ`, "utf8");
        assert.ok(!environ.includes(canary), "no secret reaches the proxy");
        assert.deepEqual(
            environ
                .split("\0")
                .filter(Boolean)
                .map((kv) => kv.split("=")[0])
                .sort(),
            ["LANG", "PATH"],
        );
        runSerialized(text, [{ method: "delete", args: [created.id, created.outs] }]);
    } finally {
        delete process.env.EGRESS_TOKENS;
        delete process.env.PULUMI_CONFIG_PASSPHRASE;
    }
});

test("a create the engine never recorded is undone by its deterministic id, and a second create of the same member replaces a leftover", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    // A killed run started the proxy; state only has a pending create with the inputs.
    const [first] = runSerialized(text, [{ method: "create", args: [inputs] }]) as any[];
    const [second] = runSerialized(text, [{ method: "create", args: [inputs] }]) as any[];
    assert.notEqual(second.outs.pid, first.outs.pid);
    assert.equal(isOurProcess(first.outs.pid, "unit-web-0"), false, "the leftover was stopped before the new start");
    const undone = await undoLocalCreate(inputs, TEST_INSTALLATION);
    assert.deepEqual(undone, [`stopped local proxy unit-web-0 (pid ${second.outs.pid})`]);
    assert.equal(isOurProcess(second.outs.pid, "unit-web-0"), false);
    assert.deepEqual(fs.readdirSync(stateDir), [], "its files are gone too");
    assert.deepEqual(await undoLocalCreate(inputs, TEST_INSTALLATION), [], "undoing again finds nothing");
});

test("a proxy with credentials: 407 without or with wrong ones, 200 with them; the password is in neither argv nor environment, and its file is gone once read", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    const password = `local-canary-${process.pid}-${Date.now()}`;
    const withAuth = { ...inputs, member: "unit-auth-0", auth: { username: "crawler", password } };
    const [created] = runSerialized(text, [{ method: "create", args: [withAuth] }]) as any[];
    try {
        const url = `http://127.0.0.1:${target.port}/auth`;
        const none = await requestViaProxy(created.outs.port, url);
        assert.equal(none.status, 407);
        assert.match(String(none.headers["proxy-authenticate"]), /^Basic realm="egress"/);
        assert.equal(
            (await requestViaProxy(created.outs.port, url, proxyBasicAuth("crawler", password + "x"))).status,
            407,
        );
        assert.equal((await requestViaProxy(created.outs.port, url, proxyBasicAuth("other", password))).status, 407);
        const ok = await requestViaProxy(created.outs.port, url, proxyBasicAuth("crawler", password));
        assert.deepEqual([ok.status, ok.body], [200, "hello /auth"]);
        for (const f of ["cmdline", "environ"])
            assert.ok(
                !fs.readFileSync(`/proc/${created.outs.pid}/${f}`, "utf8").includes(password),
                `not in /proc/<pid>/${f}`,
            );
        assert.ok(!fs.existsSync(path.join(stateDir, "unit-auth-0.auth")), "the credentials file is removed once read");
        for (const f of fs.readdirSync(stateDir))
            assert.ok(
                !fs.readFileSync(path.join(stateDir, f), "utf8").includes(password),
                `${f} holds no password (the log neither)`,
            );
        // New credentials need a new process (it reads them once, at start).
        const [diff] = runSerialized(text, [
            {
                method: "diff",
                args: [
                    created.id,
                    created.outs,
                    { ...withAuth, auth: { username: "crawler", password: password + "2" } },
                ],
            },
        ]) as any[];
        assert.deepEqual(diff.replaces, ["auth"]);
    } finally {
        runSerialized(text, [{ method: "delete", args: [created.id, created.outs] }]);
    }
    assert.deepEqual(fs.readdirSync(stateDir), []);
});

test("a same-named proxy of another installation (a shared run dir) is never stopped: create and undo fail naming both", async () => {
    const text = providerLoader(LOCAL_PROCESS_TYPE);
    const theirs = { ...inputs, member: "unit-twin-0", installation: { id: "89abcdef", legacy: false } };
    const ours = { ...theirs, installation: TEST_INSTALLATION };
    const [created] = runSerialized(text, [{ method: "create", args: [theirs] }]) as any[];
    try {
        const message =
            `local proxy unit-twin-0 (pid ${created.outs.pid}) in ${stateDir} belongs to installation 89abcdef, not to this stack's installation ${TEST_INSTALLATION.id}: egress leaves it alone. ` +
            "Two installations use the same names here; give one of them another stack name, namespace or host, or remove the thing by hand if it is really garbage";
        assert.throws(
            () => runSerialized(text, [{ method: "create", args: [ours] }]),
            (e: Error) => e.message.includes(message),
        );
        await assert.rejects(undoLocalCreate(ours, TEST_INSTALLATION), { name: "ForeignInstallationError", message });
        assert.equal(isOurProcess(created.outs.pid, "unit-twin-0"), true, "the other installation's proxy still runs");
        // A legacy installation owns only unmarked processes, not another installation's.
        await assert.rejects(undoLocalCreate(ours, { id: "0badc0de", legacy: true }), {
            name: "ForeignInstallationError",
        });
        assert.deepEqual(
            JSON.parse(fs.readFileSync(path.join(stateDir, "unit-twin-0.json"), "utf8")).installation,
            "89abcdef",
            "the ready file names the installation",
        );
    } finally {
        runSerialized(text, [{ method: "delete", args: [created.id, created.outs] }]);
    }
});
