/**
 * Every line `egress serve` writes is JSON, on stdout and stderr (docs/operations.md, "Logs"): through a
 * first start that generates the dev token, a scale, SIGINT during a scale, a restart, a SIGHUP (no TLS:
 * said and ignored), and SIGTERM during a scale. The serve helper parses each line of both streams and fails on one that is not JSON; this
 * test also checks what every line carries, and that the dev token is in none of them.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ADMIN_TOKEN, cli, killServices, procProject, proxyProcesses, serve, ServeProcess } from "../helpers/processes";
import { settled, waitFor } from "../helpers/harness";

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
// Stack `dev` without EGRESS_TOKENS: the first start generates the dev token, as `npm start` does.
const p = procProject(
    "dev",
    {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 1, maxReplicas: 20 }],
    },
    { EGRESS_TOKENS: "" },
);
after(() => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    p.cleanup();
});

const runs: ServeProcess[] = [];

/** Asks for `replicas` and returns the operation's id. */
async function scale(svc: ServeProcess, replicas: number, token?: string): Promise<string> {
    const r = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas }, token });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.operation.id;
}

test(
    "start (dev token), scale, SIGINT during a scale, restart, SIGHUP without TLS, SIGTERM during a scale: every line is JSON",
    { timeout: 300_000 },
    async () => {
        const first = await serve(p);
        runs.push(first);
        const tokenFile = path.join(p.home, "dev-token");
        const devToken = fs.readFileSync(tokenFile, "utf8").trim();
        assert.match(devToken, /^egr_/);
        const banner = first.entries.find((e) => e.devTokenFile);
        assert.ok(banner, `a line names the dev token's file:\n${first.logs.join("\n")}`);
        assert.equal(banner.devTokenFile, tokenFile);
        assert.match(banner.msg, /a dev API token was generated/);
        assert.ok(
            banner.try.every((cmd: string) => cmd.includes(`$(cat ${tokenFile})`)),
            JSON.stringify(banner.try),
        );

        await waitFor(
            "the start's converge and one healthy member",
            async () =>
                (await first.call("GET", "/v1/proxies", { token: devToken })).body.proxies?.filter(
                    (m: { health: string }) => m.health === "healthy",
                ).length === 1,
            120_000,
            200,
        );
        const two = await settled(first, await scale(first, 2, devToken), 120_000, devToken);
        assert.equal(two.status, "succeeded", JSON.stringify(two));
        await scale(first, 12, devToken);
        await waitFor("the scale to 12 to be under way", () => proxyProcesses(p).size >= 4, 60_000, 5);
        first.child.kill("SIGINT");
        assert.equal(await first.exited, 0, `a graceful stop:\n${first.logs.slice(-20).join("\n")}`);
        assert.ok(
            first.entries.some(
                (e) =>
                    e.signal === "SIGINT" &&
                    e.cancel === true &&
                    /^SIGINT: cancelling the in-flight operation/.test(e.msg),
            ),
            "SIGINT is said as a JSON line",
        );

        // The second start has its tokens file: no banner. The admin token is for the helper's own calls.
        p.env.EGRESS_TOKENS = `admin:admin:${ADMIN_TOKEN}`;
        const second = await serve(p, ["--no-converge"]);
        runs.push(second);
        assert.ok(!second.entries.some((e) => e.devTokenFile), "the banner is for the start that generated the token");
        // `systemctl reload` (the units' ExecReload) without TLS: said, and the service keeps serving.
        second.child.kill("SIGHUP");
        await waitFor("the SIGHUP line", () => second.entries.some((e) => /^SIGHUP: no TLS/.test(e.msg)), 10_000, 20);
        assert.equal(second.child.exitCode, null, "SIGHUP did not end the service");
        const down = await scale(second, 1);
        second.child.kill("SIGTERM");
        assert.equal(await second.exited, 0, `a graceful stop:\n${second.logs.slice(-20).join("\n")}`);
        assert.ok(
            second.entries.some(
                (e) =>
                    e.signal === "SIGTERM" &&
                    e.cancel === false &&
                    /^SIGTERM: finishing the in-flight operation/.test(e.msg),
            ),
            "SIGTERM is said as a JSON line",
        );
        const journal = JSON.parse(fs.readFileSync(path.join(p.home, "run", `operations-${p.stack}.json`), "utf8")) as {
            id: string;
            status: string;
        }[];
        assert.equal(journal.find((o) => o.id === down)?.status, "succeeded", "SIGTERM let the scale finish");

        for (const run of runs) {
            assert.equal(run.entries.length, run.logs.length, "every line was parsed");
            for (const e of run.entries) {
                const line = JSON.stringify(e);
                assert.equal(typeof e.level, "number", line);
                assert.match(String(e.time), RFC3339, line);
                assert.equal(e.service, "egress", line);
                assert.equal(typeof e.msg, "string", line);
                assert.ok(!line.includes(devToken), `the dev token is in no line: ${line}`);
                assert.ok(!line.includes(ADMIN_TOKEN), `no EGRESS_TOKENS token either: ${line}`);
            }
            assert.equal(run.entries.at(-1)?.msg, "egress service stopped", "the last line says the service stopped");
        }
    },
);
