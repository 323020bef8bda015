/**
 * The probe and the monitor against REAL proxies: proxy-chain servers in-process on 127.0.0.1, loopback
 * echo servers (plain and TLS with a throwaway self-signed certificate made by openssl).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { ProxyMember } from "../../src/model";
import { HealthMonitor, probeThroughProxy, Transition } from "../../src/probes";

const { Server: ProxyServer } = require("proxy-chain") as typeof import("proxy-chain");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "egress-health-"));
const echo = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.url === "/fail") {
        res.writeHead(500).end("no");
        return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ip: req.socket.remoteAddress }));
};
const listen = async <S extends net.Server>(s: S): Promise<number> => {
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    return (s.address() as net.AddressInfo).port;
};
let httpEcho: http.Server, tlsEcho: https.Server, blackHole: net.Server;
let httpPort: number, tlsPort: number, blackHolePort: number, deadPort: number, ca: string;
const proxies: InstanceType<typeof ProxyServer>[] = [];

/** A proxy-chain server; `seen` collects "GET host:port" / "CONNECT host:port" for each request it handles. */
async function startProxy(seen: string[] = []) {
    const p = new ProxyServer({
        port: 0,
        host: "127.0.0.1",
        verbose: false,
        prepareRequestFunction: ({ hostname, port, isHttp }) => (
            seen.push(`${isHttp ? "GET" : "CONNECT"} ${hostname}:${port}`),
            {}
        ),
    });
    await p.listen();
    proxies.push(p);
    return p;
}

before(async () => {
    execFileSync(
        "openssl",
        [
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            path.join(tmp, "key.pem"),
            "-out",
            path.join(tmp, "cert.pem"),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        { stdio: "ignore" },
    );
    ca = fs.readFileSync(path.join(tmp, "cert.pem"), "utf8");
    httpEcho = http.createServer(echo);
    tlsEcho = https.createServer({ key: fs.readFileSync(path.join(tmp, "key.pem")), cert: ca }, echo);
    blackHole = net.createServer(() => {
        /* accept and say nothing */
    });
    [httpPort, tlsPort, blackHolePort] = await Promise.all([listen(httpEcho), listen(tlsEcho), listen(blackHole)]);
    const probeSrv = net.createServer();
    deadPort = await listen(probeSrv);
    await new Promise((r) => probeSrv.close(r));
});

after(async () => {
    await Promise.all(proxies.map((p) => p.close(true)));
    for (const s of [httpEcho, tlsEcho, blackHole]) {
        (s as http.Server).closeAllConnections?.();
        s.close();
    }
    fs.rmSync(tmp, { recursive: true, force: true });
});

test("http:// check: absolute-form GET through the proxy, egress IP from the echo body", async () => {
    const seen: string[] = [];
    const p = await startProxy(seen);
    const r = await probeThroughProxy({
        proxyHost: "127.0.0.1",
        proxyPort: p.port,
        checkUrl: `http://127.0.0.1:${httpPort}/v1/echo`,
        timeoutMs: 2000,
    });
    assert.deepEqual(seen, [`GET 127.0.0.1:${httpPort}`]);
    assert.equal(r.ok, true, r.error);
    assert.equal(r.status, 200);
    assert.equal(r.egressIp, "127.0.0.1");
    assert.ok(r.latencyMs > 0 && r.latencyMs < 2000);
});

test("https:// check: CONNECT, then TLS verified against the given CA", async () => {
    const seen: string[] = [];
    const p = await startProxy(seen);
    const base = {
        proxyHost: "127.0.0.1",
        proxyPort: p.port,
        checkUrl: `https://127.0.0.1:${tlsPort}/v1/echo`,
        timeoutMs: 2000,
    };
    const r = await probeThroughProxy({ ...base, ca });
    assert.deepEqual(
        { ok: r.ok, status: r.status, egressIp: r.egressIp, error: r.error },
        { ok: true, status: 200, egressIp: "127.0.0.1", error: undefined },
    );
    assert.deepEqual(seen, [`CONNECT 127.0.0.1:${tlsPort}`], "the check went through the proxy, not around it");
    const untrusted = await probeThroughProxy(base);
    assert.equal(untrusted.ok, false);
    assert.match(
        untrusted.error!,
        /^TLS to 127\.0\.0\.1:\d+ through proxy 127\.0\.0\.1:\d+: DEPTH_ZERO_SELF_SIGNED_CERT/,
    );
    assert.equal((await probeThroughProxy({ ...base, rejectUnauthorized: false })).ok, true);
});

test("a TLS proxy (an https:// member): the probe speaks TLS to the proxy itself, verified, for http:// and https:// checks", async () => {
    const seen: string[] = [];
    const p = new ProxyServer({
        port: 0,
        host: "127.0.0.1",
        verbose: false,
        serverType: "https",
        httpsOptions: { key: fs.readFileSync(path.join(tmp, "key.pem")), cert: ca },
        prepareRequestFunction: ({ hostname, port, isHttp }) => (
            seen.push(`${isHttp ? "GET" : "CONNECT"} ${hostname}:${port}`),
            {}
        ),
    });
    await p.listen();
    proxies.push(p);
    const base = { proxyHost: "127.0.0.1", proxyPort: p.port, proxyTls: true, timeoutMs: 2000, ca };
    const plain = await probeThroughProxy({ ...base, checkUrl: `http://127.0.0.1:${httpPort}/v1/echo` });
    assert.deepEqual(
        { ok: plain.ok, egressIp: plain.egressIp, error: plain.error },
        { ok: true, egressIp: "127.0.0.1", error: undefined },
    );
    const secure = await probeThroughProxy({ ...base, checkUrl: `https://127.0.0.1:${tlsPort}/v1/echo` });
    assert.deepEqual(
        { ok: secure.ok, egressIp: secure.egressIp, error: secure.error },
        { ok: true, egressIp: "127.0.0.1", error: undefined },
    );
    assert.deepEqual(seen, [`GET 127.0.0.1:${httpPort}`, `CONNECT 127.0.0.1:${tlsPort}`]);
    const untrusted = await probeThroughProxy({
        ...base,
        ca: undefined,
        checkUrl: `http://127.0.0.1:${httpPort}/v1/echo`,
    });
    assert.equal(untrusted.ok, false);
    assert.match(untrusted.error!, /^GET through proxy 127\.0\.0\.1:\d+: DEPTH_ZERO_SELF_SIGNED_CERT/);
    // Plain HTTP to a TLS proxy fails: the scheme of the member's URL decides.
    assert.equal(
        (await probeThroughProxy({ ...base, proxyTls: false, checkUrl: `http://127.0.0.1:${httpPort}/v1/echo` })).ok,
        false,
    );
});

test("failures are results, not exceptions: bad status, CONNECT refused, dead proxy, silent proxy, bad URL", async () => {
    const p = await startProxy();
    const via = { proxyHost: "127.0.0.1", proxyPort: p.port, timeoutMs: 2000 };
    const status = await probeThroughProxy({ ...via, checkUrl: `http://127.0.0.1:${httpPort}/fail` });
    assert.deepEqual(
        [status.ok, status.status, status.error],
        [false, 500, `http://127.0.0.1:${httpPort} answered 500 through proxy 127.0.0.1:${p.port}`],
    );
    const deadTarget = await probeThroughProxy({ ...via, checkUrl: `https://127.0.0.1:${deadPort}/` });
    assert.equal(deadTarget.ok, false);
    assert.match(
        deadTarget.error!,
        /^CONNECT through proxy 127\.0\.0\.1:\d+: ECONNRESET/,
        "proxy-chain hangs up when the target refuses",
    );
    const auth = new ProxyServer({
        port: 0,
        host: "127.0.0.1",
        verbose: false,
        prepareRequestFunction: () => ({ requestAuthentication: true }),
    });
    await auth.listen();
    proxies.push(auth);
    const refused = await probeThroughProxy({
        ...via,
        proxyPort: auth.port,
        checkUrl: `https://127.0.0.1:${tlsPort}/`,
    });
    assert.deepEqual(
        [refused.ok, refused.status, refused.error],
        [false, 407, `proxy 127.0.0.1:${auth.port} refused CONNECT 127.0.0.1:${tlsPort} with 407`],
    );
    const dead = await probeThroughProxy({ ...via, proxyPort: deadPort, checkUrl: `http://127.0.0.1:${httpPort}/` });
    assert.equal(dead.error, `GET through proxy 127.0.0.1:${deadPort}: ECONNREFUSED`);
    const t0 = performance.now();
    const silent = await probeThroughProxy({
        ...via,
        proxyPort: blackHolePort,
        checkUrl: `http://127.0.0.1:${httpPort}/`,
        timeoutMs: 300,
    });
    const took = performance.now() - t0;
    assert.equal(silent.error, "timed out after 300 ms");
    assert.ok(took >= 295 && took < 600, `timeout honoured: ${took} ms`);
    assert.equal(
        (await probeThroughProxy({ ...via, checkUrl: "ftp://x/" })).error,
        'checkUrl "ftp://x/" is not an http:// or https:// URL',
    );
});

test("monitor over real proxies: both turn healthy; the killed one is unhealthy at its second failed probe", async () => {
    const [a, b] = [await startProxy(), await startProxy()];
    const member = (id: string, port: number): ProxyMember => ({
        id,
        pool: "web",
        provider: "local",
        kind: "local",
        index: 0,
        host: "127.0.0.1",
        port,
        url: `http://127.0.0.1:${port}`,
        zone: "local",
    });
    const intervalMs = 200;
    const seen: Transition[] = [];
    const waiters: { pred: (t: Transition) => boolean; resolve: (t: Transition) => void }[] = [];
    const waitFor = (pred: (t: Transition) => boolean) =>
        new Promise<Transition>((resolve) => waiters.push({ pred, resolve }));
    const mon = new HealthMonitor({
        checkUrl: `http://127.0.0.1:${httpPort}/v1/echo`,
        intervalMs,
        timeoutMs: 1000,
        onTransition: (t) => {
            seen.push(t);
            for (const w of waiters) if (w.pred(t)) w.resolve(t);
        },
    });
    mon.setMembers([member("web-0", a.port), member("web-1", b.port)]);
    const healthy = Promise.all(["web-0", "web-1"].map((id) => waitFor((t) => t.id === id && t.to === "healthy")));
    mon.start();
    try {
        await healthy;
        assert.equal(mon.get("web-0")!.egressIp, "127.0.0.1");
        const down = waitFor((t) => t.id === "web-0" && t.to === "unhealthy");
        await a.close(true);
        const killedAt = Date.now();
        const t = await down;
        // The rule is counted in probes (2 consecutive failures), not in wall time, which a loaded machine
        // stretches: the bound only catches a monitor that stopped probing (two intervals, the probe
        // timeout and a second of scheduling slack).
        const elapsed = t.at - killedAt;
        assert.ok(elapsed <= 2 * intervalMs + 1000 + 1000, `unhealthy after ${elapsed} ms (interval ${intervalMs} ms)`);
        assert.match(t.reason, /^2 consecutive failures; last: GET through proxy 127\.0\.0\.1:\d+: ECONNREFUSED/);
        assert.equal(mon.get("web-1")!.state, "healthy");
        assert.deepEqual(seen.map((x) => `${x.id}:${x.to}`).sort(), [
            "web-0:healthy",
            "web-0:unhealthy",
            "web-1:healthy",
        ]);
    } finally {
        await mon.stop();
    }
});

test("a proxy requiring credentials: the probe sends them on the GET and on the CONNECT; without them the probe fails with 407", async () => {
    const creds = { username: "crawler", password: "probe-password-0123" };
    const p = new ProxyServer({
        port: 0,
        host: "127.0.0.1",
        verbose: false,
        authRealm: "egress",
        prepareRequestFunction: ({ username, password }) =>
            username === creds.username && password === creds.password ? {} : { requestAuthentication: true },
    });
    await p.listen();
    proxies.push(p);
    const plain = {
        proxyHost: "127.0.0.1",
        proxyPort: p.port,
        checkUrl: `http://127.0.0.1:${httpPort}/v1/echo`,
        timeoutMs: 2000,
    };
    const tls = { ...plain, checkUrl: `https://127.0.0.1:${tlsPort}/v1/echo`, ca };
    for (const o of [plain, tls]) {
        const without = await probeThroughProxy(o);
        assert.deepEqual([without.ok, without.status], [false, 407], without.error);
        const wrong = await probeThroughProxy({ ...o, proxyAuth: { ...creds, password: "wrong-password-000" } });
        assert.equal(wrong.status, 407);
        const ok = await probeThroughProxy({ ...o, proxyAuth: creds });
        assert.equal(ok.ok, true, ok.error);
        assert.ok(!String(ok.error ?? "").includes(creds.password) && !String(without.error).includes(creds.password));
    }
});
