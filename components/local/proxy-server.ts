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
import * as fs from "node:fs";
import pino from "pino";
// A script of its own (spawned, never serialized into a dynamic provider), so it may load pino at the top.
import { createLogger } from "../../src/log/logger";
import { type Credentials, openProxy, takeCredentials } from "./proxy-listener";

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

/** The credentials of --auth, read and removed; undefined without --auth. */
function readCredentials(): Credentials | undefined {
    return process.argv.includes("--auth") ? takeCredentials(arg("auth")) : undefined;
}

async function main(): Promise<void> {
    const id = arg("id");
    const port = Number(arg("port"));
    const ready = arg("ready");
    const creds = readCredentials();
    const server = await openProxy(port, creds);
    const stop = (signal: string) => {
        log.info({ id, signal }, "stopping");
        server.close().finally(() => process.exit(0));
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
