/**
 * Members that share a process (`membersPerProcess`, components/local/hosts.ts + proxy-host.ts), through
 * the LocalProxy provider as the engine calls it, with creates in parallel: hosts fill up to the limit,
 * every member serves, a delete stops one member and not its host's others, a killed host is seen dead
 * by read and by the gone check, a forced replace's delete of the old generation spares the new one, and
 * the last delete lets the host exit and leave no file.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { localProcessProvider, type LocalProcessOutputs } from "../../components/local/provider";
import { runningProxies } from "../../components/local/process";
import { hostArgvOf } from "../../components/local/hosts";
import { getViaProxy, proxyBasicAuth, requestViaProxy, startTargetServer } from "../helpers/net";
import { TEST_INSTALLATION } from "../helpers/installation";

import { waitFor } from "../helpers/harness";

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-hosts-"));
const member = (i: number) => ({
    member: `unit-shared-${i}`,
    requestedPort: 0,
    stateDir,
    installation: TEST_INSTALLATION,
    membersPerProcess: 2,
});
let target: Awaited<ReturnType<typeof startTargetServer>>;
before(async () => (target = await startTargetServer()));
after(async () => {
    await target.close();
    for (const pids of runningProxies(stateDir).values()) for (const pid of pids) process.kill(pid, "SIGKILL");
    fs.rmSync(stateDir, { recursive: true, force: true });
});

const create = (i: number) =>
    localProcessProvider.create!(member(i)) as Promise<{ id: string; outs: LocalProcessOutputs }>;
const alive = (pid: number) => hostArgvOf(pid) !== undefined;

test("five members created at once, two per process: three hosts, each member serves, and a delete stops one member only", async () => {
    const made = await Promise.all([0, 1, 2, 3, 4].map(create));
    const byPid = new Map<number, string[]>();
    for (const m of made) byPid.set(m.outs.pid, [...(byPid.get(m.outs.pid) ?? []), m.id]);
    assert.equal(byPid.size, 3, `hosts: ${JSON.stringify([...byPid])}`);
    assert.ok([...byPid.values()].every((ids) => ids.length <= 2));
    for (const m of made) {
        assert.equal(new Set(made.map((x) => x.outs.port)).size, 5, "a port each");
        assert.deepEqual(await getViaProxy(m.outs.port, `http://127.0.0.1:${target.port}/${m.id}`), {
            status: 200,
            body: `hello /${m.id}`,
        });
        const read = await localProcessProvider.read!(m.id, m.outs);
        assert.equal((read.props as LocalProcessOutputs).running, true);
    }
    assert.deepEqual(
        [...runningProxies(stateDir).keys()].sort(),
        made.map((m) => m.id).sort(),
        "the gone check sees all five",
    );

    const [pid, ids] = [...byPid].find(([, ids]) => ids.length === 2)!;
    const [gone, kept] = ids.map((id) => made.find((m) => m.id === id)!);
    await localProcessProvider.delete!(gone.id, gone.outs);
    await assert.rejects(getViaProxy(gone.outs.port, `http://127.0.0.1:${target.port}/x`, 1000));
    assert.equal(
        (await getViaProxy(kept.outs.port, `http://127.0.0.1:${target.port}/k`)).status,
        200,
        "its neighbour serves on",
    );
    assert.ok(alive(pid));
    assert.equal(((await localProcessProvider.read!(gone.id, gone.outs)).props as LocalProcessOutputs).running, false);
    await localProcessProvider.delete!(gone.id, gone.outs); // again: already gone is fine

    // The freed place is taken by the next member before a new host is started.
    const next = await create(5);
    assert.equal(next.outs.pid, pid);
    for (const m of [...made.filter((m) => m.id !== gone.id), next]) await localProcessProvider.delete!(m.id, m.outs);
    await waitFor(
        "every host exits once it has no member",
        () => [...byPid.keys()].every((p) => !alive(p)),
        10_000,
        25,
    );
    assert.deepEqual(fs.readdirSync(stateDir), [], "no ready, order or log file left");
});

test("a forced replace (the new generation created before the old one's delete) on the same host: the delete leaves the new one serving", async () => {
    const old = await create(7);
    const neighbour = await create(8);
    // The engine's `up --replace` of a member: a create under the same id first, then the old one's delete.
    const fresh = await create(7);
    assert.equal(fresh.outs.pid, old.outs.pid, "the host that served the old generation serves the new one");
    assert.notEqual(fresh.outs.port, old.outs.port);
    await localProcessProvider.delete!(old.id, old.outs);
    assert.equal(
        (await getViaProxy(fresh.outs.port, `http://127.0.0.1:${target.port}/fresh`)).status,
        200,
        "the replacement serves after the old generation's delete",
    );
    assert.equal(((await localProcessProvider.read!(fresh.id, fresh.outs)).props as LocalProcessOutputs).running, true);
    await assert.rejects(getViaProxy(old.outs.port, `http://127.0.0.1:${target.port}/old`, 1000));
    for (const m of [fresh, neighbour]) await localProcessProvider.delete!(m.id, m.outs);
    await waitFor("the host exits once it has no member", () => !alive(old.outs.pid), 10_000, 25);
});

test("a killed host: its members read dead, the gone check drops them, a create again starts a new host", async () => {
    const [a, b] = await Promise.all([create(10), create(11)]);
    assert.equal(a.outs.pid, b.outs.pid);
    process.kill(a.outs.pid, "SIGKILL");
    await waitFor("host dead", () => !alive(a.outs.pid), 5000, 25);
    for (const m of [a, b]) {
        const read = (await localProcessProvider.read!(m.id, m.outs)).props as LocalProcessOutputs;
        assert.equal(read.running, false);
        const diff = await localProcessProvider.diff!(m.id, read, member(Number(m.id.split("-").pop())));
        assert.deepEqual(diff.replaces, ["running"]);
    }
    assert.equal(runningProxies(stateDir).size, 0);
    const again = await create(10);
    assert.notEqual(again.outs.pid, a.outs.pid);
    assert.equal((await getViaProxy(again.outs.port, `http://127.0.0.1:${target.port}/again`)).status, 200);
    for (const m of [again, b]) await localProcessProvider.delete!(m.id, m.outs);
    await waitFor("host exits", () => !alive(again.outs.pid), 10_000, 25);
    assert.deepEqual(fs.readdirSync(stateDir), []);
});

test("credentials reach a shared member through its 0600 order only, never argv, environment or a file left behind", async () => {
    const password = `hosted-canary-${process.pid}-${Date.now()}`;
    const m = (await localProcessProvider.create!({ ...member(20), auth: { username: "crawler", password } })) as {
        id: string;
        outs: LocalProcessOutputs;
    };
    const url = `http://127.0.0.1:${target.port}/auth`;
    assert.equal((await requestViaProxy(m.outs.port, url)).status, 407);
    assert.equal((await requestViaProxy(m.outs.port, url, proxyBasicAuth("crawler", password))).status, 200);
    for (const f of ["cmdline", "environ"])
        assert.ok(!fs.readFileSync(`/proc/${m.outs.pid}/${f}`, "utf8").includes(password), f);
    for (const f of fs.readdirSync(stateDir))
        assert.ok(!fs.readFileSync(path.join(stateDir, f), "utf8").includes(password), `${f} holds no password`);
    await localProcessProvider.delete!(m.id, m.outs);
});

test("a port in use: the create fails naming it, and leaves no order or ready file", async () => {
    await assert.rejects(
        localProcessProvider.create!({ ...member(30), requestedPort: target.port }),
        /\[transient\] local proxy unit-shared-30 did not start listening on port \d+: .*EADDRINUSE/,
    );
    assert.deepEqual(
        fs.readdirSync(stateDir).filter((f) => !f.endsWith(".log")),
        [],
    );
    await waitFor(
        "the host it started, with no member, exits and removes its log",
        () => fs.readdirSync(stateDir).length === 0,
        10_000,
        25,
    );
});

test("a host whose state dir is removed exits: nothing can reach its members any more", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-hosts-gone-"));
    const m = await localProcessProvider.create!({ ...member(40), stateDir: dir });
    fs.rmSync(dir, { recursive: true, force: true });
    await waitFor("host exits", () => !alive(m!.outs!.pid), 10_000, 25);
});
