/**
 * The process behind one LocalProxy: a forward proxy (plain HTTP and CONNECT) built on Apify's
 * proxy-chain, bound to loopback only. Started detached by the provider so it outlives the engine run.
 *
 * argv: --id <proxy id> --port <n|0> --ready <file>
 * Once listening it writes `{pid, port}` to the ready file (atomically), which is how the provider
 * learns the kernel-chosen port without ever racing another process for it.
 */
import * as fs from "node:fs";

function arg(name: string): string {
    const i = process.argv.indexOf(`--${name}`);
    if (i < 0 || i + 1 >= process.argv.length) {
        process.stderr.write(`proxy-server: missing --${name}\n`);
        process.exit(2);
    }
    return process.argv[i + 1];
}

async function main(): Promise<void> {
    const id = arg("id");
    const port = Number(arg("port"));
    const ready = arg("ready");
    const { Server } = require("proxy-chain") as typeof import("proxy-chain");
    // Loopback only: a local proxy is never reachable from another machine.
    const server = new Server({ host: "127.0.0.1", port, verbose: false, prepareRequestFunction: () => ({}) });
    await server.listen();
    const tmp = `${ready}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ id, pid: process.pid, port: server.port }));
    fs.renameSync(tmp, ready);
    log({ msg: "listening", id, port: server.port });
    const stop = (signal: string) => {
        log({ msg: "stopping", id, signal });
        server.close(true).finally(() => process.exit(0));
        setTimeout(() => process.exit(0), 2000).unref();
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
}

function log(o: object): void {
    process.stdout.write(JSON.stringify({ time: Date.now(), ...o }) + "\n");
}

main().catch((e) => {
    log({ msg: "failed to start", err: String(e?.message ?? e) });
    process.exit(1);
});
