/**
 * TLS on the API and the gateway (`--tls-cert`, `--tls-key`, `--gateway-tls-port`), for real: a CA and
 * certificates made by `openssl` in a temp dir, `egress serve` on the local provider, curl as the client.
 * - the API serves HTTPS on `--port`; the probes' default self-check works over it (members turn healthy);
 * - `curl --proxy https://…@127.0.0.1:<tls port> --proxy-cacert ca.pem` goes through the gateway, for an
 *   http:// origin and an https:// one (TLS inside TLS), beside the plain `--gateway-port`;
 * - SIGHUP reloads both files: the API and the TLS port serve the new certificate (its fingerprint),
 *   connections keep working; a broken file on reload is logged naming it and the old pair stays;
 * - bad files at start: exit 2 with a message naming the flag and the file, nothing left listening.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as tls from "node:tls";
import { freeLoopbackPort, listenLoopback } from "../helpers/net";
import { ADMIN_TOKEN, cliAsync, endProcProject, procProject, type ProcProject, serve } from "../helpers/processes";
import type { ServeProcess } from "../helpers/processes";
import { curl, fingerprintOf, httpsOrigin, testCa, type TestCa } from "../helpers/tls";
import { waitFor } from "../helpers/harness";

const LEASE = "tok-tls-lease-0123456789abcdef";
let p: ProcProject;
let svc: ServeProcess;
let ca: TestCa;
let first: { certFile: string; keyFile: string };
/** The files the service was started with (rewritten by the reload test). */
const served = { certFile: "", keyFile: "" };
let ports: { api: number; gateway: number; tls: number };
let origin: Awaited<ReturnType<typeof listenLoopback>>;
let tlsOrigin: Awaited<ReturnType<typeof httpsOrigin>>;

/** An API call over HTTPS, trusting the test CA. */
function api(route: string): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
        https
            .get(
                `https://127.0.0.1:${ports.api}${route}`,
                { ca: fs.readFileSync(ca.caFile), agent: false, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
                (res) => {
                    let t = "";
                    res.setEncoding("utf8")
                        .on("data", (d) => (t += d))
                        .on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(t) }));
                },
            )
            .on("error", reject);
    });
}

/** The SHA-256 fingerprint of the certificate served on `port` (not verified: this reads what is served). */
function servedFingerprint(port: number): Promise<string> {
    return new Promise((resolve, reject) => {
        const s = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
            resolve(s.getPeerCertificate().fingerprint256);
            s.end();
        });
        s.on("error", reject);
    });
}

before(async () => {
    origin = await listenLoopback(http.createServer((req, res) => res.end(`origin ${req.url}`)));
    ca = testCa();
    first = ca.issue("first");
    tlsOrigin = await httpsOrigin(ca.issue("origin"));
    served.certFile = `${ca.dir}/served.cert.pem`;
    served.keyFile = `${ca.dir}/served.key.pem`;
    fs.copyFileSync(first.certFile, served.certFile);
    fs.copyFileSync(first.keyFile, served.keyFile);
    p = procProject(
        "tls",
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 2 }],
        },
        { EGRESS_TOKENS: `admin:admin:${ADMIN_TOKEN},crawler:lease:${LEASE}` },
    );
    ports = { api: 0, gateway: await freeLoopbackPort(), tls: await freeLoopbackPort() };
    // serve() passes --gateway-port 0 first; these later flags win.
    svc = await serve(p, [
        "--gateway-port",
        String(ports.gateway),
        "--gateway-tls-port",
        String(ports.tls),
        "--tls-cert",
        served.certFile,
        "--tls-key",
        served.keyFile,
    ]);
    ports.api = Number(new URL(svc.url).port);
    await waitFor(
        "2 healthy members (probed through the HTTPS self-check)",
        async () => {
            const px = (await api("/v1/proxies")).body.proxies as { health: string }[];
            return px.length === 2 && px.every((x) => x.health === "healthy");
        },
        120_000,
        200,
    );
});
after(async () => {
    endProcProject(p);
    await origin?.close();
    await tlsOrigin?.close();
    ca?.cleanup();
});

test("the API serves HTTPS with the certificate; plain HTTP on its port gets no API", async () => {
    assert.match(svc.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ready = svc.entries.find((e) => e.msg === "egress service ready")!;
    assert.equal(ready.gatewayTls, `https://127.0.0.1:${ports.tls}`);
    assert.equal(ready.gateway, `http://127.0.0.1:${ports.gateway}`);
    assert.equal(ready.tls.fingerprint, fingerprintOf(first.certFile));
    assert.equal((await api("/v1/proxies")).status, 200);
    const r = await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", `http://127.0.0.1:${ports.api}/healthz`]);
    assert.notEqual(r.stdout, "200", "no plain HTTP API beside the HTTPS one");
    const verified = await curl(["--cacert", ca.caFile, `https://127.0.0.1:${ports.api}/healthz`]);
    assert.equal(verified.code, 0, verified.stderr);
});

test("curl --proxy https:// with --proxy-cacert: http and https origins, beside the plain gateway port", async () => {
    const viaTls = ["--proxy", `https://web:${LEASE}@127.0.0.1:${ports.tls}`, "--proxy-cacert", ca.caFile];
    const plain = await curl([...viaTls, `http://127.0.0.1:${origin.port}/a`]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout, "origin /a");
    const tunnelled = await curl([...viaTls, "--cacert", ca.caFile, `https://127.0.0.1:${tlsOrigin.port}/b`]);
    assert.equal(tunnelled.code, 0, tunnelled.stderr);
    assert.equal(tunnelled.stdout, "tls origin /b");
    const side = await curl([
        "--proxy",
        `http://web:${LEASE}@127.0.0.1:${ports.gateway}`,
        `http://127.0.0.1:${origin.port}/c`,
    ]);
    assert.equal(side.code, 0, side.stderr);
    assert.equal(side.stdout, "origin /c");
    // Without the CA the client refuses the proxy's certificate: the credentials never left.
    const untrusted = await curl([
        "--proxy",
        `https://web:${LEASE}@127.0.0.1:${ports.tls}`,
        `http://127.0.0.1:${origin.port}/`,
    ]);
    assert.equal(untrusted.code, 60, untrusted.stderr);
    // A bad token over TLS is the gateway's 407, as on the plain port.
    const bad = await curl([
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--proxy",
        `https://web:nope-0123456789abcdef@127.0.0.1:${ports.tls}`,
        "--proxy-cacert",
        ca.caFile,
        `http://127.0.0.1:${origin.port}/`,
    ]);
    assert.equal(bad.stdout, "407");
});

test("SIGHUP reloads the certificate on the API and the TLS port; a broken file keeps the old one", async () => {
    const next = ca.issue("next");
    const before = fingerprintOf(first.certFile);
    assert.equal(await servedFingerprint(ports.tls), before);
    assert.equal(await servedFingerprint(ports.api), before);
    fs.copyFileSync(next.certFile, served.certFile);
    fs.copyFileSync(next.keyFile, served.keyFile);
    svc.child.kill("SIGHUP");
    const after = fingerprintOf(next.certFile);
    await waitFor("the new certificate served", async () => (await servedFingerprint(ports.tls)) === after, 10_000, 50);
    assert.equal(await servedFingerprint(ports.api), after);
    assert.ok(svc.entries.some((e) => e.msg === "TLS certificate reloaded" && e.fingerprint === after));
    const through = await curl([
        "--proxy",
        `https://web:${LEASE}@127.0.0.1:${ports.tls}`,
        "--proxy-cacert",
        ca.caFile,
        `http://127.0.0.1:${origin.port}/d`,
    ]);
    assert.equal(through.stdout, "origin /d", through.stderr);

    fs.writeFileSync(served.keyFile, "not a key\n");
    svc.child.kill("SIGHUP");
    const failed = await waitFor(
        "the failed reload logged",
        () => svc.entries.find((e) => e.msg === "TLS reload failed: the certificate and key in use stay"),
        60_000,
        25,
    );
    assert.match(failed.error, new RegExp(`^--tls-key ${served.keyFile} is not an unencrypted PEM private key`));
    assert.equal(await servedFingerprint(ports.tls), after, "the pair in use stays");
    assert.equal(svc.child.exitCode, null, "still running");
    const keyLines = [first, next].map((k) => fs.readFileSync(k.keyFile, "utf8").split("\n")[1]);
    const leaked = svc.logs.filter((l) => l.includes(LEASE) || keyLines.some((k) => l.includes(k)));
    assert.deepEqual(leaked, [], "no key or token in the logs");
});

test("bad certificate files at start: exit 2, the message names the flag and the file", async () => {
    const other = ca.issue("other");
    const cases: [string[], RegExp][] = [
        [
            ["--tls-cert", `${ca.dir}/missing.pem`, "--tls-key", other.keyFile],
            /--tls-cert \S+missing\.pem: the file cannot be read \(ENOENT\)/,
        ],
        [
            ["--tls-cert", other.keyFile, "--tls-key", other.keyFile],
            /--tls-cert \S+other\.key\.pem is not a PEM certificate/,
        ],
        [
            ["--tls-cert", other.certFile, "--tls-key", first.keyFile],
            /--tls-key \S+first\.key\.pem is not the private key of the certificate in --tls-cert \S+other\.cert\.pem/,
        ],
        [["--tls-cert", other.certFile], /--tls-cert needs --tls-key/],
        [["--gateway-tls-port", "1"], /--gateway-tls-port needs --tls-cert and --tls-key/],
    ];
    for (const [args, message] of cases) {
        const r = await cliAsync(p, ["serve", "--port", "0", "--gateway-port", "0", ...args], 60_000);
        assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
        assert.match(r.stderr, message);
    }
});
