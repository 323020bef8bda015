// Preloaded into every test file's process by scripts/test.sh (`node --test --require`): a file whose tests
// have all ended but whose process stays alive (a Redis client still reconnecting, a server never closed, a
// child's pipe, a timer) would hold `node --test` for ever and the whole CI run with it. Once the file's last
// hook ran, this waits EGRESS_EXIT_WATCH_MS (default 60 s) for the process to exit on its own; past that
// it prints what still holds it (sockets with their ends, servers, child processes, and the kinds of every resource) and exits 1,
// so the file fails naming its leak instead of hanging (docs/decisions/0099-a-file-that-does-not-exit.md).
// The runner's own process is left alone.
"use strict";
const { after } = require("node:test");

const WAIT_MS = Number(process.env.EGRESS_EXIT_WATCH_MS ?? 60_000);

function describeHandle(h) {
    const kind = h?.constructor?.name ?? typeof h;
    try {
        if (kind === "Socket" || kind === "TLSSocket") {
            if (h.remotePort) return `${kind} ${h.localAddress}:${h.localPort} → ${h.remoteAddress}:${h.remotePort}`;
            if (h._handle?.fd !== undefined && h._handle.fd <= 2) return null; // the process's own stdio
            return `${kind} (unconnected${h.connecting ? ", connecting" : ""})`;
        }
        if (kind === "Server") {
            const a = h.address();
            return `Server listening on ${typeof a === "string" ? a : `${a?.address}:${a?.port}`}`;
        }
        if (kind === "ChildProcess") return `ChildProcess pid ${h.pid} (${h.spawnargs?.join(" ").slice(0, 160)})`;
    } catch {
        // A half-closed handle may throw on inspection; its kind is still worth naming.
    }
    return kind;
}

if ((process.env.NODE_TEST_CONTEXT ?? "").startsWith("child")) {
    // Registered once the test file's module has run (a --require preload runs before it, in the same
    // turn), so this hook comes after the file's own top-level `after` hooks (its teardown) and the wait
    // starts when they are done.
    setImmediate(() => after(watchExit));
}

function watchExit() {
    const timer = setTimeout(() => {
        const handles = process._getActiveHandles().map(describeHandle).filter(Boolean);
        const resources = process.getActiveResourcesInfo();
        process.stderr.write(
            `exit-watch: every test and hook of this file ended ${WAIT_MS} ms ago, but its process is still ` +
                `alive. Held by:\n${handles.map((h) => `  - ${h}`).join("\n") || "  (no handle named)"}\n` +
                `  resources: ${resources.join(", ")}\n`,
        );
        process.exit(1);
    }, WAIT_MS);
    timer.unref(); // only fires if something else holds the process
}
