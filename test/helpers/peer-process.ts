/**
 * Which local process is on the other end of a loopback TCP connection, read from /proc: lets a test's
 * origin tell local proxy members apart (they all connect from 127.0.0.1, from ports the kernel picks).
 */
import * as fs from "node:fs";

interface TcpEntry {
    localPort: number;
    remotePort: number;
    listening: boolean;
    inode: string;
}

function tcpEntries(): TcpEntry[] {
    const out: TcpEntry[] = [];
    for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
        let text = "";
        try {
            text = fs.readFileSync(file, "utf8");
        } catch {
            continue;
        }
        for (const line of text.trim().split("\n").slice(1)) {
            const f = line.trim().split(/\s+/);
            const port = (addr: string) => parseInt(addr.split(":")[1], 16);
            out.push({ localPort: port(f[1]), remotePort: port(f[2]), listening: f[3] === "0A", inode: f[9] });
        }
    }
    return out;
}

/** The socket inodes process `pid` holds open (empty when it is gone). */
export function socketInodes(pid: number): Set<string> {
    const out = new Set<string>();
    let fds: string[] = [];
    try {
        fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
        return out;
    }
    for (const fd of fds) {
        try {
            const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
            if (m) out.add(m[1]);
        } catch {
            /* closed meanwhile */
        }
    }
    return out;
}

/** The pid of the process listening on loopback TCP `port`; throws when there is none. */
export function pidListeningOn(port: number): number {
    const inode = tcpEntries().find((e) => e.listening && e.localPort === port)?.inode;
    if (!inode) throw new Error(`nothing listens on port ${port}`);
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)))
        if (socketInodes(Number(pid)).has(inode)) return Number(pid);
    throw new Error(`no process holds the listener on port ${port}`);
}

/**
 * True when the connection that reached our server's `serverPort` from `peerPort` belongs to process
 * `pid`: the peer's end of it (local port `peerPort`, remote port `serverPort`) is one of its sockets.
 */
export function connectionFrom(pid: number, peerPort: number, serverPort: number): boolean {
    const entry = tcpEntries().find((e) => e.localPort === peerPort && e.remotePort === serverPort && !e.listening);
    return entry !== undefined && socketInodes(pid).has(entry.inode);
}
