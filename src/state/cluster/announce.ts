import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { describeHolder, identityAlive, ProcessIdentity, selfIdentity } from "../../engine";

/**
 * A running service tells other egress processes of the same run dir that it owns the stack's desired
 * state: `<runDir>/service-<stack>.json` names its process and a unix socket that serves the same HTTP
 * API without tokens. The socket is 0600 in a 0700 directory: whoever can open it is the user who
 * could edit the stack file anyway (docs/decisions/0023-unix-socket.md).
 */
export interface Announcement extends ProcessIdentity {
    stack: string;
    socket: string;
    /** The TCP address, for people reading the file. */
    url: string;
    since: string;
}

export function announcementFile(runDir: string, stack: string): string {
    return path.join(runDir, `service-${stack}.json`);
}

/**
 * The live service of `stack`, or undefined. An announcement whose process is gone (a killed service)
 * is removed with its socket, and `onStale` says so.
 */
export function findService(
    runDir: string,
    stack: string,
    onStale?: (a: Announcement) => void,
): Announcement | undefined {
    const file = announcementFile(runDir, stack);
    let a: Announcement;
    try {
        a = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw new Error(
            `unreadable service announcement ${file}: ${(e as Error).message}; remove it if no \`egress serve\` runs for stack ${stack}`,
        );
    }
    if (identityAlive(a)) return a;
    fs.rmSync(file, { force: true });
    fs.rmSync(a.socket, { force: true });
    onStale?.(a);
    return undefined;
}

/** Refuses to start a second service for one stack (two owners of desired state); clears a dead one's files. */
export function assertNoOtherService(runDir: string, stack: string, onStale: (a: Announcement) => void): void {
    const other = findService(runDir, stack, onStale);
    if (other && other.pid !== process.pid)
        throw new Error(
            `an egress service for stack ${stack} already runs: ${describeHolder({ ...other, command: "egress serve" })}, ${other.url}; stop it first`,
        );
}

/**
 * Listens on the unix socket with `listener` and writes the announcement. `close` stops listening and
 * removes both files (only if they are still this process's).
 */
export async function announceService(o: {
    runDir: string;
    stack: string;
    url: string;
    listener: http.RequestListener;
}): Promise<{ socket: string; close(): Promise<void> }> {
    fs.mkdirSync(o.runDir, { recursive: true, mode: 0o700 });
    fs.chmodSync(o.runDir, 0o700);
    const socket = socketPath(o.runDir, o.stack);
    fs.rmSync(socket, { force: true }); // a dead service's socket (assertNoOtherService ran at start)
    const server = http.createServer(o.listener);
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(socket, () => resolve());
    });
    fs.chmodSync(socket, 0o600);
    const me: Announcement = { ...selfIdentity(), stack: o.stack, socket, url: o.url, since: new Date().toISOString() };
    const file = announcementFile(o.runDir, o.stack);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(me) + "\n", { mode: 0o600 });
    fs.renameSync(tmp, file);
    let closed: Promise<void> | undefined;
    return {
        socket,
        close: () =>
            (closed ??= (async () => {
                try {
                    const now = JSON.parse(fs.readFileSync(file, "utf8")) as Announcement;
                    if (now.pid === me.pid && now.since === me.since) fs.rmSync(file, { force: true });
                } catch {
                    /* already gone */
                }
                const stopped = new Promise<void>((r) => server.close(() => r()));
                server.closeAllConnections();
                await stopped; // net.Server removes the socket file itself
                if (path.dirname(socket) !== o.runDir)
                    fs.rmSync(path.dirname(socket), { recursive: true, force: true }); // the temp-dir fallback
            })()),
    };
}

/**
 * `<runDir>/service-<stack>.sock`, unless that is longer than a unix socket path may be (~107 bytes):
 * then a 0700 directory under the system temp dir, named by a hash of the run dir.
 */
function socketPath(runDir: string, stack: string): string {
    const plain = path.join(runDir, `service-${stack}.sock`);
    if (Buffer.byteLength(plain) <= 100) return plain;
    const dir = path.join(
        os.tmpdir(),
        `egress-${crypto.createHash("sha256").update(path.resolve(runDir)).digest("hex").slice(0, 16)}`,
    );
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    return path.join(dir, `service-${stack}.sock`);
}
