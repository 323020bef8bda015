/**
 * Certificates for tests, made with the real `openssl` in a temp dir: a throwaway CA and server
 * certificates it signs for 127.0.0.1 and localhost. Also a loopback HTTPS origin and curl runs.
 */
import * as cp from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";

export interface TestCa {
    dir: string;
    /** The CA's certificate (what clients trust: `--cacert`, `--proxy-cacert`). */
    caFile: string;
    /** A new key and certificate for 127.0.0.1/localhost, signed by the CA, as `<name>.key.pem`/`<name>.cert.pem`. */
    issue(name: string): { certFile: string; keyFile: string };
    cleanup(): void;
}

function openssl(cwd: string, args: string[]): void {
    const r = cp.spawnSync("openssl", args, { cwd, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${r.stderr}`);
}

export function testCa(): TestCa {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-tls-"));
    const caFile = path.join(dir, "ca.pem");
    openssl(
        dir,
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem"].concat([
            "-days",
            "2",
            "-subj",
            "/CN=egress test CA",
        ]),
    );
    fs.writeFileSync(
        path.join(dir, "ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    );
    return {
        dir,
        caFile,
        issue(name) {
            const keyFile = path.join(dir, `${name}.key.pem`);
            const certFile = path.join(dir, `${name}.cert.pem`);
            openssl(
                dir,
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", `${name}.csr`].concat([
                    "-subj",
                    "/CN=127.0.0.1",
                ]),
            );
            openssl(
                dir,
                ["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key"].concat([
                    "-CAcreateserial",
                    "-out",
                    certFile,
                    "-days",
                    "2",
                    "-extfile",
                    "ext.cnf",
                ]),
            );
            return { certFile, keyFile };
        },
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

/** The SHA-256 fingerprint of a PEM certificate file, as Node prints a peer certificate's (`AA:BB:…`). */
export function fingerprintOf(certFile: string): string {
    return new crypto.X509Certificate(fs.readFileSync(certFile)).fingerprint256;
}

/** A loopback HTTPS origin with `cert`, answering `tls origin <path>`. */
export async function httpsOrigin(cert: { certFile: string; keyFile: string }): Promise<{
    port: number;
    close(): Promise<void>;
}> {
    const server = https.createServer(
        { cert: fs.readFileSync(cert.certFile), key: fs.readFileSync(cert.keyFile) },
        (req, res) => {
            res.writeHead(200, { "content-type": "text/plain" });
            res.end(`tls origin ${req.url}`);
        },
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        port: (server.address() as { port: number }).port,
        close: () =>
            new Promise<void>((r) => {
                server.closeAllConnections();
                server.close(() => r());
            }),
    };
}

/** Runs curl (argv, no shell) to completion: its exit code, output and error text. */
export function curl(args: string[], timeoutMs = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
        cp.execFile(
            "curl",
            ["--silent", "--show-error", "--max-time", "20", ...args],
            { timeout: timeoutMs },
            (e, stdout, stderr) =>
                resolve({ code: e ? Number((e as { code?: number }).code ?? -1) : 0, stdout, stderr }),
        );
    });
}
