/**
 * The README's first command, as a new user runs it: a fresh clone of the commit under test (nothing of
 * this checkout's .egress/, dist/ or node_modules), `npm start`, then what the README promises: the dev
 * stack's 3 proxies healthy, a lease whose proxy forwards, a request through the rotating gateway, a
 * graceful SIGTERM (exit 0), and a work tree git still calls clean.
 *
 * Caches stay the machine's (npm's, Go's), as they would for a user who built something before; the
 * cold first start is measured by hand (docs/bench.md). Ports come from EGRESS_PORT / EGRESS_GATEWAY_PORT
 * (the flags' documented variables) so a developer's own service on 8080/8888 is left alone.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine";
import { closedPort } from "../fixtures/ports";
import { getViaProxy, requestViaProxy, startTargetServer } from "../helpers/net";

import { OFFLINE_ENV } from "../helpers/project";
import { GiveUp, waitFor } from "../helpers/harness";

const clone = fs.mkdtempSync(path.join(os.tmpdir(), "egress-readme-"));
const git = (...args: string[]) => cp.execFileSync("git", args, { encoding: "utf8" }).trim();
let npm: cp.ChildProcess | undefined;
after(() => {
    if (npm?.pid && npm.exitCode === null) process.kill(-npm.pid, "SIGKILL");
    // What the run left: the dev stack's local proxies (they outlive the service by design).
    if (fs.existsSync(path.join(clone, "dist", "src", "cli.js")))
        cp.spawnSync(process.execPath, ["dist/src/cli.js", "destroy", "--yes", "--quiet"], {
            cwd: clone,
            env: userEnv(0, 0),
            timeout: 120_000,
        });
    fs.rmSync(clone, { recursive: true, force: true });
});

/** A user's shell: no test harness variables (backend, passphrase, tokens) leak into the clone's run. */
function userEnv(port: number, gatewayPort: number): NodeJS.ProcessEnv {
    const keep = [
        "PATH",
        "HOME",
        "LANG",
        "TMPDIR",
        "GOPATH",
        "GOCACHE",
        "GOMODCACHE",
        "GOPROXY",
        "GOFLAGS",
        "npm_config_cache",
    ];
    const env: NodeJS.ProcessEnv = Object.fromEntries(
        keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]),
    );
    return { ...env, ...OFFLINE_ENV, EGRESS_PORT: String(port), EGRESS_GATEWAY_PORT: String(gatewayPort) };
}

test(
    "fresh clone: npm start serves 3 healthy proxies, leases, the gateway; SIGTERM exits 0; the tree stays clean",
    { timeout: 15 * 60_000 },
    async (t) => {
        const head = git("-C", PACKAGE_ROOT, "rev-parse", "HEAD");
        git("clone", "-q", "--no-hardlinks", PACKAGE_ROOT, clone);
        git("-C", clone, "checkout", "-q", "--detach", head);
        const [port, gatewayPort] = [await closedPort(), await closedPort()];
        const target = await startTargetServer();
        t.after(() => target.close());

        const started = Date.now();
        const child = (npm = cp.spawn("npm", ["start"], {
            cwd: clone,
            env: userEnv(port, gatewayPort),
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
        }));
        let out = "";
        child.stdout!.setEncoding("utf8").on("data", (d) => (out += d));
        child.stderr!.setEncoding("utf8").on("data", (d) => (out += d));
        const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
        const tail = () => out.split("\n").slice(-12).join("\n");

        await waitFor(
            "egress service ready",
            () => {
                if (child.exitCode !== null) throw new GiveUp(`npm start exited with ${child.exitCode}:\n${tail()}`);
                return out.split("\n").some((l) => l.startsWith("{") && JSON.parse(l).msg === "egress service ready");
            },
            12 * 60_000,
            200,
        );
        t.diagnostic(`npm start on a fresh clone → ready: ${Date.now() - started} ms`);

        const token = fs.readFileSync(path.join(clone, ".egress", "dev-token"), "utf8").trim();
        const api = async (method: string, route: string, body?: unknown) => {
            const r = await fetch(`http://127.0.0.1:${port}${route}`, {
                method,
                headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
                body: body === undefined ? undefined : JSON.stringify(body),
            });
            return { status: r.status, body: (await r.json()) as any };
        };
        const healthy = await waitFor(
            "3 healthy proxies",
            async () => {
                const { body } = await api("GET", "/v1/proxies?pool=dev&state=healthy");
                return body.proxies?.length === 3 ? body.proxies : undefined;
            },
            120_000,
            250,
        );
        t.diagnostic(`3 healthy: ${Date.now() - started} ms`);
        assert.deepEqual(healthy.map((p: any) => p.id).sort(), ["dev-0", "dev-1", "dev-2"]);

        const lease = await api("POST", "/v1/leases", { pool: "dev", target: "127.0.0.1" });
        assert.equal(lease.status, 201, JSON.stringify(lease.body));
        const proxyPort = Number(new URL(lease.body.lease.proxy.url).port);
        const direct = await getViaProxy(proxyPort, `http://127.0.0.1:${target.port}/leased`);
        assert.deepEqual(direct, { status: 200, body: "hello /leased" });
        assert.equal((await api("POST", `/v1/leases/${lease.body.lease.id}/release`, { outcome: "ok" })).status, 200);

        const viaGateway = await requestViaProxy(gatewayPort, `http://127.0.0.1:${target.port}/gateway`, {
            "proxy-authorization": `Basic ${Buffer.from(`dev:${token}`).toString("base64")}`,
        });
        assert.equal(viaGateway.status, 200, viaGateway.body);
        assert.equal(viaGateway.body, "hello /gateway");

        // SIGTERM to the service itself (README: `kill -TERM <pid>`), not to npm.
        const servePid = Number(
            fs.readdirSync("/proc").find(
                (pid) =>
                    /^\d+$/.test(pid) &&
                    (() => {
                        // node's own argv, not the `sh -c "… && node dist/src/cli.js serve …"` npm runs it under.
                        try {
                            return (
                                fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(1, 3).join(" ") ===
                                    "dist/src/cli.js serve" && fs.readlinkSync(`/proc/${pid}/cwd`) === clone
                            );
                        } catch {
                            return false;
                        }
                    })(),
            ),
        );
        assert.ok(servePid > 0, "the serve process is found");
        process.kill(servePid, "SIGTERM");
        assert.equal(await exited, 0, tail());

        assert.equal(git("-C", clone, "status", "--porcelain"), "", "npm start left the tree as it was cloned");
    },
);
