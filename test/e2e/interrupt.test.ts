/**
 * Ctrl-C (SIGINT) in the middle of an update, for the CLI and for the service: the engine cancels safely,
 * the operation ends as `interrupted` (exit 130 for the CLI), and the members that do run stay visible:
 * read from state, not from the previous run's stack output.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import {
    backendLockFiles,
    cli,
    engineProcessesOf,
    killServices,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    spawnCli,
} from "../helpers/processes";
import { waitFor } from "../helpers/harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "i", provider: "local", replicas: 0, maxReplicas: 20 }],
};
let p: ProcProject;
before(() => (p = procProject("intr", config)));
after(() => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
});

const ids = (proxies: { id: string }[]) => proxies.map((x) => `${p.stack}-${x.id}`).sort();

test(
    "Ctrl-C during `egress up`: exit 130, the members state holds are printed and are exactly what runs",
    { timeout: 180_000 },
    async () => {
        p.setReplicas("i", 15);
        const up = spawnCli(p, ["up", "--json"]);
        let stdout = "";
        up.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
        const exited = new Promise<number | null>((r) => up.once("exit", (code) => r(code)));
        await waitFor("3 proxies to run", () => proxyProcesses(p).size >= 3, 60_000, 5);
        up.kill("SIGINT");
        assert.equal(await exited, 130);
        const out = JSON.parse(stdout.trim().split("\n").pop()!);
        assert.equal(out.ok, false);
        assert.match(out.error.message, /interrupted/);
        assert.ok(out.proxies.length >= 3 && out.proxies.length < 15, `a partial pool (${out.proxies.length})`);
        assert.deepEqual(ids(out.proxies), [...proxyProcesses(p).keys()].sort(), "printed members = running proxies");
        assert.deepEqual(engineProcessesOf(up.pid!), [], "no engine process outlives the cancelled run");
        assert.deepEqual(backendLockFiles(p), [], "the engine released its lock");
        const again = cli(p, ["up", "--json", "--quiet"]);
        assert.equal(again.code, 0, again.stderr);
        assert.equal(JSON.parse(again.stdout).proxies.length, 15);
    },
);

test(
    "SIGINT to `egress serve` during a scale: the operation is interrupted and a restart lists what runs",
    { timeout: 180_000 },
    async () => {
        p.setReplicas("i", 2);
        assert.equal(cli(p, ["up", "--quiet"]).code, 0);
        let svc = await serve(p, ["--no-converge"]);
        const op = (await svc.call("PUT", "/v1/pools/i/replicas", { body: { replicas: 15 } })).body.operation;
        await waitFor("5 proxies to run", () => proxyProcesses(p).size >= 5, 60_000, 5);
        svc.child.kill("SIGINT");
        assert.equal(await svc.exited, 0, "a graceful stop");
        const journal = JSON.parse(fs.readFileSync(path.join(p.home, "run", `operations-${p.stack}.json`), "utf8")) as {
            id: string;
            status: string;
        }[];
        assert.equal(journal.find((o) => o.id === op.id)?.status, "interrupted");
        const running = [...proxyProcesses(p).keys()].sort();
        assert.ok(running.length >= 5 && running.length < 15, `a partial pool (${running.length})`);
        svc = await serve(p, ["--no-converge"]);
        const listed = (await svc.call("GET", "/v1/proxies")).body.proxies as { id: string }[];
        assert.deepEqual(ids(listed), running, "the restarted service lists exactly the members that run");
        svc.child.kill("SIGTERM");
        await svc.exited;
    },
);
