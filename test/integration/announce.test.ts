/**
 * The service announcement: a unix socket serving the given listener (0600, in a 0700 dir, under the
 * temp dir when the run dir's path is too long for a socket), refused while another live service
 * announced the stack, cleared when its process is gone, removed on close.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { announceService, announcementFile, assertNoOtherService, findService } from "../../src/state/cluster/announce";
import { ServiceClient } from "../../src/cli/service-client";
import { killHard } from "../helpers/cli";

const dirs: string[] = [];
const tempDir = () => {
    dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), "egress-ann-")));
    return dirs[dirs.length - 1];
};
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

const listener = (req: { url?: string }, res: { end(s: string): void }) => res.end(JSON.stringify({ url: req.url }));

test("announce → found, answers over the socket; a run dir too long for a socket path uses a 0700 temp dir; close removes both", async () => {
    const base = tempDir();
    for (const runDir of [path.join(base, "run"), path.join(base, "x".repeat(90), "run")]) {
        const a = await announceService({ runDir, stack: "s", url: "http://127.0.0.1:1", listener: listener as any });
        if (runDir.length > 80) assert.ok(a.socket.startsWith(path.join(os.tmpdir(), "egress-")), a.socket);
        else assert.equal(a.socket, path.join(runDir, "service-s.sock"));
        assert.equal(fs.statSync(a.socket).mode & 0o777, 0o600);
        assert.equal(fs.statSync(path.dirname(a.socket)).mode & 0o777, 0o700);
        const found = findService(runDir, "s");
        assert.deepEqual([found?.pid, found?.socket], [process.pid, a.socket]);
        assert.deepEqual((await new ServiceClient(a.socket).request("GET", "/v1/pools")).body, { url: "/v1/pools" });
        await a.close();
        assert.equal(findService(runDir, "s"), undefined);
        assert.ok(!fs.existsSync(a.socket));
    }
});

test("a second service for the stack is refused while the first lives; a dead one's files are cleared", async () => {
    const runDir = tempDir();
    const other = cp.spawn("sleep", ["30"]);
    const file = announcementFile(runDir, "s");
    const sock = path.join(runDir, "service-s.sock");
    fs.writeFileSync(
        file,
        JSON.stringify({
            pid: other.pid,
            hostname: os.hostname(),
            stack: "s",
            socket: sock,
            url: "http://127.0.0.1:9",
            since: "t",
        }),
    );
    try {
        assert.throws(
            () => assertNoOtherService(runDir, "s", () => undefined),
            new RegExp(`already runs: pid ${other.pid} \\(egress serve\\).*http://127\\.0\\.0\\.1:9; stop it first`),
        );
    } finally {
        await killHard(other);
    }
    fs.writeFileSync(sock, "");
    const cleared: number[] = [];
    assertNoOtherService(runDir, "s", (a) => cleared.push(a.pid));
    assert.deepEqual(cleared, [other.pid]);
    assert.ok(!fs.existsSync(file) && !fs.existsSync(sock));
});
