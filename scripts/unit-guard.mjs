// Preloaded into every test/unit file's process (`node --test --import ./scripts/unit-guard.mjs`, by
// scripts/test.sh and `npm run test:unit`): a unit test starts no process and opens no socket, so the unit
// suite is fast and needs nothing installed. A test that must is an integration test: test/integration/
// (docs/decisions/0097-unit-means-no-io.md). The runner's own process is left alone (it spawns the files).
import { createRequire } from "node:module";

if ((process.env.NODE_TEST_CONTEXT ?? "").startsWith("child")) {
    // The modules' own objects, which the compiled tests' require() calls get: patched in place.
    const require = createRequire(import.meta.url);
    const cp = require("node:child_process");
    const net = require("node:net");
    const dgram = require("node:dgram");
    const refuse = (what) =>
        function refused() {
            throw new Error(
                `a unit test may not ${what}: move the file to test/integration/ (docs/decisions/0097-unit-means-no-io.md)`,
            );
        };
    for (const f of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"])
        cp[f] = refuse(`start a process (child_process.${f})`);
    net.Server.prototype.listen = refuse("listen on a socket");
    net.Socket.prototype.connect = refuse("open a connection");
    dgram.createSocket = refuse("open a UDP socket");
}
