/**
 * The process behind one LocalProxy: a forward proxy (plain HTTP and CONNECT) built on Apify's
 * proxy-chain, bound to loopback only. Started detached by the provider so it outlives the engine run.
 *
 * argv: --id <proxy id> --port <n|0> --ready <file> [--auth <file>] [--installation <id>]
 * With --auth, clients must present the credentials in that file (`{username, password}`, mode 0600,
 * written by the provider): the password never travels in argv or the environment, both readable in
 * /proc. The file is read once and removed.
 * Once listening it writes `{pid, port}` to the ready file (atomically), which is how the provider
 * learns the kernel-chosen port without ever racing another process for it.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import pino from "pino";
// A script of its own (spawned, never serialized into a dynamic provider), so it may load pino at the top.
import { createLogger } from "../../src/log/logger";

/** JSON lines into the proxy's log file (its stdout), like the service's: RFC 3339 times, secrets redacted. */
const log = createLogger({
    base: { component: "local-proxy" },
    destination: pino.destination({ dest: 1, sync: true }),
});

function arg(name: string): string {
    const i = process.argv.indexOf(`--${name}`);
    if (i < 0 || i + 1 >= process.argv.length) {
        log.error(`proxy-server: missing --${name}`);
        process.exit(2);
    }
    return process.argv[i + 1];
}

/** Equal strings, compared in constant time for equal lengths (a length mismatch is no secret: the hash hides it). */
function same(a: string, b: string): boolean {
    const h = (s: string) => crypto.createHash("sha256").update(s, "utf8").digest();
    return crypto.timingSafeEqual(h(a), h(b));
}

/** The credentials of --auth, read and removed; undefined without --auth. */
function readCredentials(): { username: string; password: string } | undefined {
    const i = process.argv.indexOf("--auth");
    if (i < 0) return undefined;
    const file = arg("auth");
    const creds = JSON.parse(fs.readFileSync(file, "utf8")) as { username: string; password: string };
    fs.rmSync(file, { force: true });
    if (typeof creds?.username !== "string" || typeof creds?.password !== "string")
        throw new Error(`--auth file ${file} does not hold {username, password}`);
    return creds;
}

async function main(): Promise<void> {
    const id = arg("id");
    const port = Number(arg("port"));
    const ready = arg("ready");
    const creds = readCredentials();
    const { Server } = require("proxy-chain") as typeof import("proxy-chain");
    // Loopback only: a local proxy is never reachable from another machine.
    const server = new Server({
        host: "127.0.0.1",
        port,
        verbose: false,
        authRealm: "egress",
        // Both compared, always (no early exit on a wrong user): 407 with `Proxy-Authenticate` otherwise.
        prepareRequestFunction: ({ username, password }) => {
            if (!creds) return {};
            const ok = Number(same(username ?? "", creds.username)) & Number(same(password ?? "", creds.password));
            return ok ? {} : { requestAuthentication: true, failMsg: "proxy credentials required" };
        },
    });
    await server.listen();
    const stop = (signal: string) => {
        log.info({ id, signal }, "stopping");
        server.close(true).finally(() => process.exit(0));
        setTimeout(() => process.exit(0), 2000).unref();
    };
    // Handlers and the "listening" line come before the ready file: whoever reads it may stop us at once.
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
    log.info({ id, port: server.port, auth: !!creds }, "listening");
    const tmp = `${ready}.tmp`;
    // The installation (optional: proxies started before installation ids have none) lets gc tell whose files these are.
    const installation = process.argv.includes("--installation") ? arg("installation") : undefined;
    fs.writeFileSync(
        tmp,
        JSON.stringify({ id, pid: process.pid, port: server.port, ...(installation ? { installation } : {}) }),
    );
    fs.renameSync(tmp, ready);
}

main().catch((e) => {
    log.error({ err: e }, "failed to start");
    process.exit(1);
});
