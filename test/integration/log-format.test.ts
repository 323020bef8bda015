/** Log lines of the service and of the local proxy child: pino JSON, times in RFC 3339, secrets redacted. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createLogger } from "../../src/log/logger";
import { PACKAGE_ROOT } from "../../src/engine/env";

/** RFC 3339 date-time in UTC with milliseconds, as pino's isoTime writes it. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertRfc3339(time: unknown, near = Date.now()): void {
    assert.equal(typeof time, "string", `time is a string (got ${JSON.stringify(time)})`);
    assert.match(time as string, RFC3339);
    assert.ok(Math.abs(Date.parse(time as string) - near) < 60_000, `${time} is now`);
}

test("service log lines carry an RFC 3339 time", () => {
    const lines: string[] = [];
    const log = createLogger({ destination: { write: (l: string) => void lines.push(l) } });
    log.info({ token: "s3cret" }, "hello");
    log.child({ component: "x" }).warn("child");
    assert.equal(lines.length, 2);
    for (const l of lines.map((x) => JSON.parse(x))) {
        assertRfc3339(l.time);
        assert.equal(l.service, "egress");
    }
    assert.equal(JSON.parse(lines[0]).token, "[redacted]");
});

const server = path.join(PACKAGE_ROOT, "dist", "components", "local", "proxy-server.js");

test(
    "the local proxy child logs pino JSON lines with RFC 3339 times: listening, stopping",
    { timeout: 30_000 },
    async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-proxy-log-"));
        const ready = path.join(dir, "p.json");
        const child = cp.spawn(process.execPath, [server, "--id", "p-0", "--port", "0", "--ready", ready], {
            stdio: ["ignore", "pipe", "pipe"],
            env: { PATH: process.env.PATH ?? "" },
        });
        let out = "";
        child.stdout.on("data", (c) => (out += c));
        child.stderr.on("data", (c) => (out += c));
        const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
        try {
            const deadline = Date.now() + 20_000;
            while (!fs.existsSync(ready) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
            assert.ok(fs.existsSync(ready), `the proxy became ready: ${out}`);
            const { port } = JSON.parse(fs.readFileSync(ready, "utf8"));
            child.kill("SIGTERM");
            assert.equal(await exited, 0);
            const lines = out
                .trim()
                .split("\n")
                .map((l) => JSON.parse(l));
            assert.deepEqual(
                lines.map((l) => l.msg),
                ["listening", "stopping"],
            );
            for (const l of lines) {
                assertRfc3339(l.time);
                assert.equal(l.component, "local-proxy");
                assert.equal(l.id, "p-0");
                assert.equal(typeof l.level, "number");
            }
            assert.equal(lines[0].port, port);
            assert.equal(lines[1].signal, "SIGTERM");
        } finally {
            child.kill("SIGKILL");
            fs.rmSync(dir, { recursive: true, force: true });
        }
    },
);

test("a proxy child started wrongly logs the problem as a JSON line and exits 2", () => {
    const r = cp.spawnSync(process.execPath, [server, "--port", "0"], { encoding: "utf8", timeout: 20_000 });
    assert.equal(r.status, 2);
    const line = JSON.parse(r.stdout.trim());
    assert.equal(line.msg, "proxy-server: missing --id");
    assert.equal(line.level, 50);
    assertRfc3339(line.time);
});
