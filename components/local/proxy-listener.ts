/**
 * One member's forward proxy (plain HTTP and CONNECT), built on Apify's proxy-chain and bound to loopback
 * only. Shared by the two processes that serve members: proxy-server.ts (one member per process) and
 * proxy-host.ts (many members per process, `membersPerProcess`).
 */
import * as crypto from "node:crypto";

export interface Credentials {
    username: string;
    password: string;
}

/** Equal strings, compared in constant time for equal lengths (a length mismatch is no secret: the hash hides it). */
function same(a: string, b: string): boolean {
    const h = (s: string) => crypto.createHash("sha256").update(s, "utf8").digest();
    return crypto.timingSafeEqual(h(a), h(b));
}

/** A listening proxy: its port (the kernel's choice when asked for 0) and how to close it. */
export interface OpenProxy {
    port: number;
    close(): Promise<void>;
}

/** Opens a proxy on 127.0.0.1:`port` that requires `creds` when given (407 with `Proxy-Authenticate` otherwise). */
export async function openProxy(port: number, creds: Credentials | undefined): Promise<OpenProxy> {
    const { Server } = require("proxy-chain") as typeof import("proxy-chain");
    // Loopback only: a local proxy is never reachable from another machine.
    const server = new Server({
        host: "127.0.0.1",
        port,
        verbose: false,
        authRealm: "egress",
        // Both compared, always (no early exit on a wrong user).
        prepareRequestFunction: ({ username, password }) => {
            if (!creds) return {};
            const ok = Number(same(username ?? "", creds.username)) & Number(same(password ?? "", creds.password));
            return ok ? {} : { requestAuthentication: true, failMsg: "proxy credentials required" };
        },
    });
    await server.listen();
    return { port: server.port, close: () => server.close(true) };
}

/** Reads credentials handed over in a 0600 file and removes the file; throws when it does not hold them. */
export function takeCredentials(file: string): Credentials {
    const fs = require("node:fs") as typeof import("node:fs");
    const creds = JSON.parse(fs.readFileSync(file, "utf8")) as Credentials;
    fs.rmSync(file, { force: true });
    if (typeof creds?.username !== "string" || typeof creds?.password !== "string")
        throw new Error(`credentials file ${file} does not hold {username, password}`);
    return creds;
}
