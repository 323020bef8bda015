import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";

/** A port free on 127.0.0.1 right now (for servers whose port must be known before they start: redis-server, HAProxy). */
export async function freeLoopbackPort(): Promise<number> {
    return freePortRange(1);
}

/** The kernel's ephemeral range (outgoing connections and `listen(0)` take their ports from it). */
function ephemeralPorts(): [number, number] {
    try {
        const [lo, hi] = fs
            .readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
            .trim()
            .split(/\s+/)
            .map(Number);
        if (lo > 0 && hi >= lo) return [lo, hi];
    } catch {
        /* not Linux: the usual default */
    }
    return [32768, 60999];
}

/**
 * `n` consecutive ports free on 127.0.0.1 right now (a local pool with `basePort` pins member i to basePort+i).
 * Picked below the kernel's ephemeral range: a port there that is free now can be taken a moment later by
 * any outgoing connection (a probe, the engine's gRPC, a Redis client), and the pool's create would then
 * fail with EADDRINUSE. Below it only an explicit bind can take it.
 */
export async function freePortRange(n: number): Promise<number> {
    const [ephemeralLow] = ephemeralPorts();
    const low = 10_000;
    const span = Math.max(1_000, ephemeralLow - n - low);
    for (let attempt = 0; attempt < 50; attempt++) {
        const base = low + Math.floor(Math.random() * span);
        const held: net.Server[] = [];
        try {
            for (let i = 0; i < n; i++)
                held.push(
                    await new Promise<net.Server>((resolve, reject) => {
                        const s = net.createServer();
                        s.once("error", reject);
                        s.listen(base + i, "127.0.0.1", () => resolve(s));
                    }),
                );
            return base;
        } catch {
            /* taken: try another range */
        } finally {
            await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
        }
    }
    throw new Error("no free port range on 127.0.0.1");
}

/** Starts `server` on a free port of 127.0.0.1; `close` also drops open (keep-alive, hanging) connections. */
export async function listenLoopback(
    server: http.Server,
): Promise<{ port: number; url: string; close(): Promise<void> }> {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    return {
        port,
        url: `http://127.0.0.1:${port}`,
        close: () =>
            new Promise<void>((r) => {
                server.closeAllConnections();
                server.close(() => r());
            }),
    };
}

/**
 * A loopback origin that counts the requests it has at once (politeness tests): each page takes
 * `delayMs`, so requests overlap; `most()` is the highest count since `reset()`; `onRequest` sees each.
 */
export async function countingOrigin(
    delayMs: number,
    onRequest: (req: http.IncomingMessage) => void = () => undefined,
): Promise<{ port: number; close(): Promise<void>; most(): number; reset(): void }> {
    let now = 0;
    let most = 0;
    const server = http.createServer((req, res) => {
        onRequest(req);
        most = Math.max(most, ++now);
        setTimeout(() => {
            now--;
            res.writeHead(200, { "content-type": "text/plain" }).end(`page ${req.url}`);
        }, delayMs);
    });
    const { port, close } = await listenLoopback(server);
    return { port, close, most: () => most, reset: () => (most = 0) };
}

/** A loopback HTTP server that answers `hello <path>`; the target behind every proxy in the tests. */
export async function startTargetServer(): Promise<{ port: number; close(): Promise<void> }> {
    const server = http.createServer((req, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`hello ${req.url}`);
    });
    const { port, close } = await listenLoopback(server);
    return { port, close };
}

/** A plain-HTTP request sent through a forward proxy (absolute-form request line). */
export async function getViaProxy(
    proxyPort: number,
    url: string,
    timeoutMs = 5000,
): Promise<{ status: number; body: string }> {
    const { status, body } = await requestViaProxy(proxyPort, url, {}, timeoutMs);
    return { status, body };
}

/** getViaProxy with request headers (e.g. Proxy-Authorization), answering the response headers too. */
export function requestViaProxy(
    proxyPort: number,
    url: string,
    headers: Record<string, string> = {},
    timeoutMs = 5000,
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
    return new Promise((resolve, reject) => {
        const req = http.request(
            {
                host: "127.0.0.1",
                port: proxyPort,
                method: "GET",
                path: url,
                headers: { host: new URL(url).host, ...headers },
                timeout: timeoutMs,
            },
            (res) => {
                let body = "";
                res.setEncoding("utf8");
                res.on("data", (c) => (body += c));
                res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
            },
        );
        req.on("timeout", () => req.destroy(new Error(`timeout via proxy ${proxyPort}`)));
        req.on("error", reject);
        req.end();
    });
}

/** Opens a CONNECT tunnel through the proxy and speaks HTTP/1.0 to the target inside it. */
export function connectViaProxy(
    proxyPort: number,
    targetPort: number,
    path = "/tunnel",
    timeoutMs = 5000,
    headers: Record<string, string> = {},
): Promise<{ connectStatus: number; body: string }> {
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: "127.0.0.1",
            port: proxyPort,
            method: "CONNECT",
            path: `127.0.0.1:${targetPort}`,
            headers,
            timeout: timeoutMs,
        });
        req.on("connect", (res, socket) => {
            let data = "";
            socket.setEncoding("utf8");
            socket.on("data", (c) => (data += c));
            socket.on("end", () =>
                resolve({ connectStatus: res.statusCode ?? 0, body: data.split("\r\n\r\n").slice(1).join("\r\n\r\n") }),
            );
            socket.on("error", reject);
            socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1:${targetPort}\r\n\r\n`);
        });
        req.on("timeout", () => req.destroy(new Error(`CONNECT timeout via proxy ${proxyPort}`)));
        req.on("error", reject);
        req.end();
    });
}

/**
 * Writes `request` as is on a fresh loopback connection and reads the answer: resolves once the
 * server closes the connection (`closedByServer`), or after `waitMs` with whatever was answered by
 * then (a kept-alive connection). For requests node:http cannot or will not send.
 */
export function rawHttp(
    port: number,
    request: string,
    waitMs = 5000,
): Promise<{ status: number; headers: Record<string, string>; body: string; closedByServer: boolean }> {
    return new Promise((resolve, reject) => {
        const socket = net.connect({ host: "127.0.0.1", port });
        let data = "";
        let closedByServer = false;
        const parse = () => {
            const [head, ...rest] = data.split("\r\n\r\n");
            const [statusLine, ...headerLines] = head.split("\r\n");
            const headers = Object.fromEntries(
                headerLines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
            );
            return { status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n"), closedByServer };
        };
        socket.setEncoding("utf8");
        socket.on("data", (c) => (data += c));
        socket.on("end", () => {
            closedByServer = true;
            resolve(parse());
        });
        // A reset after a complete answer still counts as the server closing the connection.
        socket.on("error", (e) => (data ? resolve({ ...parse(), closedByServer: true }) : reject(e)));
        socket.setTimeout(waitMs, () => {
            socket.destroy();
            const r = parse();
            if (r.status)
                resolve(r); // answered, connection kept open (keep-alive)
            else reject(new Error(`no answer within ${waitMs} ms`));
        });
        socket.write(request);
    });
}

/** A `Proxy-Authorization` header for basic auth. */
export function proxyBasicAuth(username: string, password: string): Record<string, string> {
    return { "proxy-authorization": `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}` };
}

/** An answer read whole. */
export interface ProxiedAnswer {
    status: number;
    headers: http.IncomingHttpHeaders;
    body: string;
}

/**
 * One plain-HTTP request through a forward proxy on loopback `port` (absolute-form, its own connection),
 * read whole. `auth` is the Proxy-Authorization value (`null`: none); see proxyBasicAuth.
 */
export function viaProxy(port: number, url: string, auth: string | null, method = "GET"): Promise<ProxiedAnswer> {
    return new Promise((resolve, reject) => {
        const headers: Record<string, string> = { host: new URL(url).host };
        if (auth) headers["proxy-authorization"] = auth;
        const req = http.request({ host: "127.0.0.1", port, method, path: url, headers, agent: false }, (res) => {
            let body = "";
            res.setEncoding("utf8")
                .on("data", (c) => (body += c))
                .on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        });
        req.on("error", reject).end();
    });
}
