/**
 * One owner of desired state, one writer lock, on the real engine with a real service: `egress scale`
 * goes through the running service (its unix socket) and reports only a count that was applied; the
 * service's operations wait for the writer lock a CLI holds; a CLI `up` beside the service is followed
 * within a second through the stack checkpoint.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { convergedOk, startTestService, TestService, TOKENS } from "../helpers/service";
import { holdWriterLock, killHard, runCli, testHome } from "../helpers/cli";
import { announcementFile } from "../../src/state/cluster/announce";
import { checkpointDir, checkpointProxies } from "../../src/engine";
import { settled, waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 6 }],
};
const home = testHome();
let svc: TestService;
let egress: (...args: string[]) => ReturnType<typeof runCli>;
const backend = () => path.join(svc.project.dir, "backend");
const stackFile = () => path.join(svc.project.dir, "stacks", "Pulumi.svc.yaml");
const fileReplicas = () => YAML.parse(fs.readFileSync(stackFile(), "utf8")).config["egress:pools"][0].replicas;
const outputCount = () => checkpointProxies(backend(), "svc")!.filter((p) => p.pool === "web").length;

before(async () => {
    svc = await startTestService(config, { runDir: home.runDir });
    await convergedOk(svc);
    egress = (...args) =>
        runCli({ ...svc.project.env, EGRESS_HOME: home.dir }, ["--cwd", svc.project.dir, "--stack", "svc", ...args]);
});
after(async () => {
    await svc?.stop();
    if (svc) await egress("destroy", "--yes", "--quiet");
    await svc?.close();
    home.cleanup();
});

/** The operation whose desired count for web is `n` and that has not settled, once the service has it. */
const opWanting = (n: number) =>
    waitFor(
        `an operation for web=${n}`,
        async () => {
            const ops = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations;
            return ops.find((o: any) => o.desired.web === n && (o.status === "queued" || o.status === "running"));
        },
        30_000,
        50,
    );

test("the service announces its socket (0600, run dir 0700); --no-up is refused while it owns the stack", async () => {
    const a = JSON.parse(fs.readFileSync(announcementFile(home.runDir, "svc"), "utf8"));
    assert.equal(a.pid, process.pid);
    assert.equal(a.url, svc.url);
    assert.equal(fs.statSync(a.socket).mode & 0o777, 0o600);
    assert.equal(fs.statSync(home.runDir).mode & 0o777, 0o700);
    const before = fs.readFileSync(stackFile());
    const r = await egress("scale", "web", "2", "--no-up");
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /owns the desired state of stack svc; drop --no-up/);
    assert.deepEqual(fs.readFileSync(stackFile()), before);
});

test(
    "CLI scale first, service PUT second: the CLI reports what its operation applied, the last request wins",
    { timeout: 180_000 },
    async () => {
        // Holding the writer lock keeps the first operation waiting, so the order of the two requests is certain.
        const holder = await holdWriterLock(home.runDir, "svc", "egress up");
        const cli = egress("--json", "scale", "web", "3");
        const first = await opWanting(3);
        await waitFor(
            "the service waiting for the writer lock",
            async () =>
                svc.logs.some((l) =>
                    l.includes(`waiting for the stack's writer lock, held by pid ${holder.pid} (egress up)`),
                ),
            10_000,
            50,
        );
        const put = await svc.call("PUT", "/v1/pools/web/replicas", { token: TOKENS.scale, body: { replicas: 2 } });
        assert.equal(put.status, 202);
        assert.notEqual(put.body.operation.id, first.id, "the PUT queues behind the CLI's operation");
        await killHard(holder); // the service clears the dead holder's lock and goes on
        const r = await cli;
        assert.equal(r.code, 0, r.stderr);
        const body = JSON.parse(r.stdout);
        assert.deepEqual(
            [body.ok, body.via, body.requested, body.applied, body.operation.id],
            [true, "service", 3, 3, first.id],
        );
        assert.match(r.stderr, /create\s+web-2/, "engine progress streams to the CLI's stderr");
        assert.deepEqual((await settled(svc, first.id)).applied, { web: 3 });
        const second = await settled(svc, put.body.operation.id);
        assert.deepEqual([second.status, second.applied], ["succeeded", { web: 2 }]);
        assert.ok(
            svc.logs.some((l) => l.includes(`removed a stale writer lock left by pid ${holder.pid} (egress up)`)),
            "the service logs the stale lock it cleared",
        );
        assert.deepEqual([fileReplicas(), outputCount()], [2, 2]);
    },
);

test(
    "service PUT first, CLI second (applied), and a CLI request folded into a later one fails saying so",
    { timeout: 240_000 },
    async () => {
        // PUT 4 runs; the CLI's 5 queues behind it and is applied.
        let holder = await holdWriterLock(home.runDir, "svc", "egress up");
        const put4 = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 4 } });
        const cli5 = egress("--json", "scale", "web", "5");
        const queued5 = await opWanting(5);
        assert.notEqual(queued5.id, put4.body.operation.id);
        await killHard(holder);
        const r5 = await cli5;
        assert.equal(r5.code, 0, r5.stderr);
        assert.deepEqual(JSON.parse(r5.stdout).applied, 5);
        assert.equal((await settled(svc, put4.body.operation.id)).status, "succeeded");
        assert.deepEqual([fileReplicas(), outputCount()], [5, 5]);

        // The CLI's 1 queues; a later PUT for 3 folds into the same operation (latest wins): the CLI must not claim 1.
        holder = await holdWriterLock(home.runDir, "svc", "egress up");
        const put2 = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 2 } });
        const cli1 = egress("--json", "scale", "web", "1");
        const queued1 = await opWanting(1);
        const put3 = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 3 } });
        assert.equal(put3.body.operation.id, queued1.id, "folded into the CLI's queued operation");
        await killHard(holder);
        const r1 = await cli1;
        assert.equal(r1.code, 1, r1.stderr);
        const body = JSON.parse(r1.stdout);
        assert.deepEqual(
            [body.ok, body.requested, body.applied, body.operation.id, body.operation.requests],
            [false, 1, 3, queued1.id, 2],
        );
        assert.match(body.error.message, /a later request for 3 replaced this one for 1/);
        assert.match(r1.stderr, /error: a later request for 3 replaced this one for 1 .* scaled to 3, not 1/);
        assert.equal((await settled(svc, put2.body.operation.id)).status, "succeeded");
        assert.deepEqual([fileReplicas(), outputCount()], [3, 3], "file = outputs = the last request");
        assert.equal(
            (await svc.call("GET", "/v1/proxies?pool=web", { token: TOKENS.discover })).body.proxies.length,
            3,
        );
    },
);

test(
    "a member deleted by a CLI `up` beside the service stops being listed and leased within 1 s",
    { timeout: 120_000 },
    async () => {
        await waitFor(
            "3 healthy members",
            async () =>
                (await svc.call("GET", "/v1/proxies?state=healthy", { token: TOKENS.discover })).body.proxies.length ===
                3,
            20_000,
        );
        // A person edits the stack file and runs `egress up` (the service owns `scale`, not the file's readers).
        fs.writeFileSync(stackFile(), fs.readFileSync(stackFile(), "utf8").replace("replicas: 3", "replicas: 1"));
        const up = egress("up", "--quiet");
        let goneAt: number | undefined;
        let running = true;
        void up.then(() => (running = false));
        while (running || !goneAt) {
            const ids = (await svc.call("GET", "/v1/proxies?pool=web", { token: TOKENS.discover })).body.proxies.map(
                (p: any) => p.id,
            );
            if (!ids.includes("web-1") && !ids.includes("web-2")) {
                goneAt ??= Date.now();
                if (!running) break;
            }
            await new Promise((r) => setTimeout(r, 20));
            if (!running && Date.now() > (await up).exitedAt + 5000) break;
        }
        const r = await up;
        assert.equal(r.code, 0, r.stderr);
        const written = fs.statSync(path.join(checkpointDir(backend()), "svc.json")).mtimeMs;
        assert.ok(goneAt, "the deleted members disappeared from discovery");
        const latency = goneAt - written;
        console.log(
            `# outside change seen ${Math.round(latency)} ms after the final checkpoint write (${Math.round(goneAt - r.exitedAt)} ms after the CLI exited)`,
        );
        assert.ok(latency < 1000, `seen after ${latency} ms`);
        for (let i = 0; i < 5; i++) {
            const lease = await svc.call("POST", "/v1/leases", {
                token: TOKENS.lease,
                body: { pool: "web", ttlSeconds: 5 },
            });
            if (lease.status === 201) {
                assert.equal(lease.body.lease.proxy.id, "web-0", "only the remaining member is leased");
                await svc.call("POST", `/v1/leases/${lease.body.lease.id}/release`, {
                    token: TOKENS.lease,
                    body: { outcome: "ok" },
                });
            } else assert.equal(lease.status, 503);
        }
    },
);

test(
    "a graceful stop removes the announcement; a dead service's announcement is ignored and removed",
    { timeout: 60_000 },
    async () => {
        await svc.stop();
        const file = announcementFile(home.runDir, "svc");
        assert.ok(!fs.existsSync(file), "removed on close");
        assert.ok(!fs.existsSync(path.join(home.runDir, "service-svc.sock")), "socket removed on close");
        fs.writeFileSync(
            file,
            JSON.stringify({
                pid: 2 ** 22 + 17,
                hostname: os.hostname(),
                stack: "svc",
                socket: path.join(home.runDir, "service-svc.sock"),
                url: "http://127.0.0.1:1",
                since: new Date().toISOString(),
            }),
        );
        const r = await egress("--json", "scale", "web", "2", "--no-up");
        assert.equal(r.code, 0, r.stderr);
        assert.match(
            r.stderr,
            new RegExp(`removed the announcement of a service that is no longer running \\(pid ${2 ** 22 + 17}\\)`),
        );
        assert.deepEqual(JSON.parse(r.stdout), { ok: true, pool: "web", previous: 1, replicas: 2 });
        assert.ok(!fs.existsSync(file));
    },
);
