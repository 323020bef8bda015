/**
 * The crawler's view of deploy/haproxy.cfg: a real HAProxy (the shipped file, rendered with test ports)
 * in front of two real `egress serve` processes; requests through its gateway port succeed on both
 * replicas (plain HTTP and CONNECT), and after `kill -9` of one serve HAProxy marks it down through
 * /readyz while requests keep succeeding on the other.
 *
 * Two replicas of ONE stack cannot run yet (the second refuses to start until issue 19's leader lands),
 * so the two serves are two stacks with their own homes and local proxies, each with the same pool
 * name and token: for a crawler behind HAProxy they are interchangeable, which is what this checks.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startHaproxy, TestHaproxy } from "../helpers/haproxy";
import { connectViaProxy, freeLoopbackPort, proxyBasicAuth, requestViaProxy, startTargetServer } from "../helpers/net";
import {
    ADMIN_TOKEN,
    cli,
    killServices,
    procProject,
    ProcProject,
    serve,
    ServeProcess,
    untilHealthy,
} from "../helpers/processes";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2, cooldownSeconds: 0 }],
};
const projects: ProcProject[] = [];
const services: ServeProcess[] = [];
let lb: TestHaproxy;
let target: Awaited<ReturnType<typeof startTargetServer>>;

before(async () => {
    target = await startTargetServer();
    const replicas = [];
    for (const stack of ["ha1", "ha2"]) {
        const p = procProject(stack, config);
        projects.push(p);
        replicas.push({ p, apiPort: await freeLoopbackPort(), gatewayPort: await freeLoopbackPort() });
    }
    services.push(
        ...(await Promise.all(
            replicas.map((r) =>
                serve(r.p, [
                    "--port",
                    String(r.apiPort),
                    "--gateway-port",
                    String(r.gatewayPort),
                    "--target-cooldown",
                    "0",
                ]),
            ),
        )),
    );
    for (const svc of services) await untilHealthy(svc, 2, 180_000, 200);
    lb = await startHaproxy({ apiPort: await freeLoopbackPort(), gatewayPort: await freeLoopbackPort(), replicas });
});
after(async () => {
    killServices();
    for (const p of projects) {
        cli(p, ["destroy", "--yes", "--quiet"]);
        p.cleanup();
    }
    await lb?.cleanup();
    await target?.close();
});

const auth = () => proxyBasicAuth("web", ADMIN_TOKEN);
const viaGateway = (path: string) => requestViaProxy(lb.gatewayPort, `http://127.0.0.1:${target.port}${path}`, auth());
/** Gateway servers by name → their status and sessions so far. */
const gatewayServers = async () =>
    new Map(
        (await lb.stat())
            .filter((r) => r.pxname === "egress_gateway_replicas" && r.svname.startsWith("egress-"))
            .map((r) => [r.svname, r]),
    );
const readyzViaLb = async () => (await fetch(`http://127.0.0.1:${lb.apiPort}/readyz`)).status;

test(
    "through HAProxy's gateway port requests succeed on both replicas, HTTP and CONNECT",
    { timeout: 60_000 },
    async () => {
        await waitFor(
            "both replicas UP in HAProxy",
            async () => [...(await gatewayServers()).values()].filter((s) => s.status === "UP").length === 2,
            20_000,
            200,
        );
        for (let i = 0; i < 10; i++) {
            const r = await viaGateway(`/plain-${i}`);
            assert.equal(r.status, 200, r.body);
            assert.equal(r.body, `hello /plain-${i}`);
            const c = await connectViaProxy(lb.gatewayPort, target.port, `/tunnel-${i}`, 5000, auth());
            assert.equal(c.connectStatus, 200);
            assert.equal(c.body, `hello /tunnel-${i}`);
        }
        const served = [...(await gatewayServers()).values()].map((s) => s.stot);
        assert.ok(
            served.every((n) => n > 0),
            `leastconn spread the connections over both replicas: ${served}`,
        );
        assert.equal(await readyzViaLb(), 200);
    },
);

test(
    "kill -9 of one serve: HAProxy marks it down through /readyz and requests keep succeeding",
    { timeout: 90_000 },
    async () => {
        const failures: { at: number; error: string }[] = [];
        let ok = 0;
        let stop = false;
        let killedAt = 0;
        const client = async () => {
            for (let i = 0; !stop; i++) {
                try {
                    const r = await viaGateway(`/load-${i}`);
                    if (r.status === 200 && r.body === `hello /load-${i}`) ok++;
                    else failures.push({ at: Date.now() - killedAt, error: `${r.status} ${r.body}` });
                } catch (e) {
                    failures.push({ at: Date.now() - killedAt, error: (e as Error).message });
                }
            }
        };
        // As many clients as one replica has members: the survivor alone can serve them all.
        const clients = Array.from({ length: 2 }, client);
        await waitFor("requests flow", () => ok >= 20, 20_000, 25);
        const victim = services[0];
        killedAt = Date.now();
        victim.child.kill("SIGKILL");
        await victim.exited;
        // Both backends check the replica's /readyz, each on its own schedule: wait for both marks.
        const down = await waitFor(
            "HAProxy marks egress-1 down in both backends",
            async () => {
                const rows = (await lb.stat()).filter((r) => r.svname === "egress-1" && r.pxname.startsWith("egress_"));
                return rows.length === 2 && rows.every((r) => r.status.startsWith("DOWN")) ? Date.now() : 0;
            },
            15_000,
            50,
        );
        const okAtDown = ok;
        await waitFor("requests keep succeeding after the mark", () => ok >= okAtDown + 40, 20_000, 25);
        stop = true;
        await Promise.all(clients);
        const s = await gatewayServers();
        process.stdout.write(
            `# marked down ${down - killedAt} ms after kill -9; ${ok} requests ok, ${failures.length} failed: ${JSON.stringify(failures.slice(0, 5))}\n`,
        );
        assert.equal(s.get("egress-2")?.status, "UP");
        assert.ok(down - killedAt < 5000, `marked down within 5 s (inter 1s, fall 2): ${down - killedAt} ms`);
        // Only what was in flight on the killed replica fails (at most one per client, at the kill); a new
        // connection refused by it is retried on the other (retries + redispatch 1), so nothing after fails.
        assert.ok(failures.length <= clients.length, `at most the requests in flight: ${JSON.stringify(failures)}`);
        assert.deepEqual(
            failures.filter((f) => f.at > 1000),
            [],
            "no request fails later than the kill itself, before or after the mark",
        );
        assert.equal(await readyzViaLb(), 200, "the API behind HAProxy answers from the survivor");
        assert.equal(services[1].child.exitCode, null, "the survivor still runs");
    },
);
