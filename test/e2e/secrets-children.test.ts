/**
 * A canary token in EGRESS_TOKENS (and a canary in an unrelated variable of the operator's shell) must
 * reach no child process: not the Pulumi CLI, not its plugins, not the proxies. It must not be in the
 * logs or in any file of state either.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import {
    killServices,
    ADMIN_TOKEN,
    engineProcessesOf,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    cli,
    environOf,
} from "../helpers/processes";
import { settled, waitFor } from "../helpers/harness";

const CANARY = `canary${Date.now().toString(36)}x9q`;
let p: ProcProject;
before(() => {
    p = procProject(
        "canary",
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "k", provider: "local", replicas: 1, maxReplicas: 10 }],
        },
        { EGRESS_TOKENS: `admin:admin:${ADMIN_TOKEN},crawler:lease:${CANARY}`, SOME_SHELL_SECRET: CANARY },
    );
});
after(() => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
});

function filesUnder(dir: string): string[] {
    return (fs.readdirSync(dir, { recursive: true }) as string[])
        .map((f) => path.join(dir, f))
        .filter((f) => fs.lstatSync(f, { throwIfNoEntry: false })?.isFile()); // not through links (.egress/bin)
}

test(
    "the canary reaches no engine process, no proxy, no log line and no state file",
    { timeout: 180_000 },
    async () => {
        const svc = await serve(p);
        try {
            // The token works (so the service really holds it)...
            const lease = await fetch(`${svc.url}/v1/proxies`, { headers: { authorization: `Bearer ${CANARY}` } });
            assert.equal(lease.status, 403, "a lease-scoped token is known but may not list proxies");
            // ...and an engine run is under way while we look at every process it started.
            const op = (await svc.call("PUT", "/v1/pools/k/replicas", { body: { replicas: 4 } })).body.operation;
            const seen = new Map<number, string>();
            await waitFor(
                "the engine's processes to appear and the operation to settle",
                async () => {
                    for (const e of engineProcessesOf(svc.child.pid!)) seen.set(e.pid, e.environ);
                    return (await svc.call("GET", `/v1/operations/${op.id}`)).body.operation.status === "succeeded";
                },
                120_000,
                20,
            );
            assert.ok(
                [...seen.keys()].length >= 3,
                `saw the supervisor, the CLI and its plugins (${seen.size} processes)`,
            );
            for (const [pid, env] of seen) {
                assert.ok(!env.includes(CANARY), `engine process ${pid} does not carry the canary`);
                assert.ok(!env.includes("EGRESS_TOKENS="), `engine process ${pid} has no EGRESS_TOKENS at all`);
                // The caller's Pulumi settings do reach it (egress no longer overrides plugin acquisition).
                assert.ok(
                    env.split("\0").includes("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true"),
                    `engine process ${pid} got the caller's PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION`,
                );
            }
            const proxies = proxyProcesses(p);
            assert.equal(proxies.size, 4);
            for (const pid of proxies.values())
                assert.ok(!environOf(pid).includes(CANARY), `proxy ${pid} does not carry the canary`);
            assert.ok(!svc.logs.join("\n").includes(CANARY), "no log line holds the canary");
            for (const f of [
                ...filesUnder(p.home),
                ...filesUnder(p.backendDir),
                ...filesUnder(path.join(p.dir, "stacks")),
            ])
                assert.ok(!fs.readFileSync(f).includes(CANARY), `${f} does not hold the canary`);
            assert.equal((await settled(svc, op.id)).status, "succeeded");
        } finally {
            svc.child.kill("SIGTERM");
            await svc.exited;
        }
    },
);
