/**
 * End to end on the real engine: stack config → program → Pulumi CLI → detached proxy processes →
 * stack output `proxies` → real HTTP and CONNECT traffic through every proxy to a loopback server.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { pidsMentioning, tempProject } from "../helpers/project";
import { connectViaProxy, getViaProxy, startTargetServer } from "../helpers/net";
import type { ProxyMember } from "../../src/model";

const config = (replicas: number) => ({
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas, maxReplicas: 10 }],
});

/** pids of our proxy processes for this project (their argv carries the project's run dir). */
const proxyPids = (runDir: string) => pidsMentioning(runDir);

async function assertAllServe(proxies: ProxyMember[], targetPort: number): Promise<void> {
    for (const p of proxies) {
        assert.equal(p.host, "127.0.0.1");
        assert.equal(p.url, `http://127.0.0.1:${p.port}`);
        const plain = await getViaProxy(p.port, `http://127.0.0.1:${targetPort}/${p.id}`);
        assert.deepEqual(plain, { status: 200, body: `hello /${p.id}` });
        const tunnel = await connectViaProxy(p.port, targetPort, `/tunnel-${p.id}`);
        assert.equal(tunnel.connectStatus, 200);
        assert.equal(tunnel.body, `hello /tunnel-${p.id}`);
    }
}

const project = tempProject("e2e", config(3));
const runDir = `${project.dir}/run`;
let target: Awaited<ReturnType<typeof startTargetServer>>;

before(async () => {
    target = await startTargetServer();
});
after(async () => {
    await project.driver.destroy().catch(() => undefined);
    await target.close();
    project.cleanup();
});

test("up 3 → scale 5 → scale 1 → kill → up recreates → destroy leaves nothing", { timeout: 300_000 }, async () => {
    const up3 = await project.driver.up();
    assert.ok(up3.changes.create >= 3, `creates: ${JSON.stringify(up3.changes)}`);
    let proxies = await project.driver.proxies();
    assert.deepEqual(
        proxies.map((p) => p.id),
        ["web-0", "web-1", "web-2"],
    );
    assert.equal(new Set(proxies.map((p) => p.port)).size, 3, "ports are distinct");
    await assertAllServe(proxies, target.port);
    assert.equal(proxyPids(runDir).length, 3);
    const firstPorts = proxies.map((p) => p.port);

    project.writeConfig(config(5));
    await project.driver.up();
    proxies = await project.driver.proxies();
    assert.deepEqual(
        proxies.map((p) => p.id),
        ["web-0", "web-1", "web-2", "web-3", "web-4"],
    );
    assert.deepEqual(
        proxies.slice(0, 3).map((p) => p.port),
        firstPorts,
        "scaling up leaves existing members alone",
    );
    await assertAllServe(proxies, target.port);
    assert.equal(proxyPids(runDir).length, 5);

    project.writeConfig(config(1));
    await project.driver.up();
    proxies = await project.driver.proxies();
    assert.deepEqual(
        proxies.map((p) => p.id),
        ["web-0"],
        "scaling down removes the highest indices",
    );
    assert.equal(proxies[0].port, firstPorts[0]);
    assert.equal(proxyPids(runDir).length, 1);

    // Kill the process behind web-0: refresh notices, up recreates it.
    process.kill(proxyPids(runDir)[0], "SIGKILL");
    await new Promise((r) => setTimeout(r, 200));
    await assert.rejects(getViaProxy(proxies[0].port, `http://127.0.0.1:${target.port}/dead`));
    const upAgain = await project.driver.up();
    assert.ok(
        (upAgain.changes.replace ?? 0) + (upAgain.changes.create ?? 0) >= 1,
        `recreated: ${JSON.stringify(upAgain.changes)}`,
    );
    proxies = await project.driver.proxies();
    assert.deepEqual(
        proxies.map((p) => p.id),
        ["web-0"],
    );
    await assertAllServe(proxies, target.port);
    assert.equal(proxyPids(runDir).length, 1);

    await project.driver.destroy();
    assert.deepEqual(proxyPids(runDir), [], "no proxy processes left");
    assert.deepEqual(await project.driver.resources(), [], "no resources in state");
    assert.deepEqual(await project.driver.proxies(), []);
    const leftovers = fs.existsSync(`${runDir}/local/e2e`) ? fs.readdirSync(`${runDir}/local/e2e`) : [];
    assert.deepEqual(leftovers, [], "no pid or log files left");
});
