import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { closedPort } from "../fixtures/ports";
import { ensureTestPackages } from "./deps";

/**
 * OpenSSH's privilege-separation directory is compiled in (Debian: /run/sshd) and sshd refuses to start
 * without it ("Missing privilege separation directory"). /run is a tmpfs, empty after every boot and on a
 * new machine, so every test that starts an sshd creates it first instead of relying on the libvirt
 * sandbox's setup having run earlier.
 */
export function ensureSshdPrivsepDir(): void {
    ensureTestPackages(); // openssh-server
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    fs.chmodSync("/run/sshd", 0o755);
}

export interface LoopbackSshd {
    port: number;
    /** sshd's pid (tests stop it with SIGSTOP to play a hung host). */
    pid: number;
    hostKeyFile: string;
    /** Everything sshd wrote to stderr so far (LogLevel VERBOSE). */
    log(): string;
    stop(): void;
}

/**
 * A real sshd on a free 127.0.0.1 port with its own config and host key under `dir`, accepting the keys
 * in `authorizedKeys`. Resolves when sshd says it listens; rejects (never skips) when it cannot start.
 */
export async function startLoopbackSshd(dir: string, authorizedKeys: string[]): Promise<LoopbackSshd> {
    ensureSshdPrivsepDir();
    const hostKeyFile = path.join(dir, "host");
    cp.execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKeyFile]);
    fs.writeFileSync(path.join(dir, "authorized_keys"), authorizedKeys.map((k) => `${k}\n`).join(""));
    const port = await closedPort();
    const config = path.join(dir, "sshd_config");
    fs.writeFileSync(
        config,
        [
            `Port ${port}`,
            "ListenAddress 127.0.0.1",
            `HostKey ${hostKeyFile}`,
            "PidFile none",
            `AuthorizedKeysFile ${dir}/authorized_keys`,
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "LogLevel VERBOSE",
            "",
        ].join("\n"),
    );
    const sshd = cp.spawn("/usr/sbin/sshd", ["-D", "-e", "-f", config], { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    sshd.stderr!.on("data", (d) => (log += d));
    const deadline = Date.now() + 10_000;
    while (!/Server listening on 127\.0\.0\.1 port/.test(log)) {
        if (sshd.exitCode !== null || Date.now() > deadline) {
            sshd.kill();
            throw new Error(`sshd did not start: ${log}`);
        }
        await new Promise((r) => setTimeout(r, 20));
    }
    return { port, pid: sshd.pid!, hostKeyFile, log: () => log, stop: () => void sshd.kill() };
}
