import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as tls from "node:tls";

export interface ProbeOptions {
    proxyHost: string;
    proxyPort: number;
    /** The proxy itself takes TLS (an `https://` member URL): the probe speaks TLS to it, verified against `ca`. */
    proxyTls?: boolean;
    /**
     * Fetched through the proxy. http:// goes as an absolute-form GET to the proxy; https:// through a
     * CONNECT tunnel and TLS, which is what crawlers do for most sites. The service's `GET /v1/echo`
     * answers `{ip}`, which is recorded as the proxy's egress IP.
     */
    checkUrl: string;
    /** Bound on the whole probe: connect, CONNECT, TLS, response body. */
    timeoutMs: number;
    /** Extra trust anchors for an https:// check URL (tests use a self-signed echo server). */
    ca?: string | Buffer | (string | Buffer)[];
    /** Credentials the proxy requires: sent as `Proxy-Authorization: Basic` on the GET or the CONNECT. */
    proxyAuth?: { username: string; password: string };
    /** @default true — a proxy that cannot carry verified TLS is not healthy. */
    rejectUnauthorized?: boolean;
}

export interface ProbeResult {
    /** True for a 2xx answer from the check URL, received within the timeout. */
    ok: boolean;
    /** Wall time until the response ended or the probe gave up (ms, 0.1 ms resolution). */
    latencyMs: number;
    /** Status of the check URL's answer (or of the proxy's CONNECT refusal). */
    status?: number;
    /** `ip` from a JSON body, when the check URL returns one. */
    egressIp?: string;
    /** What went wrong, in words an operator can act on. */
    error?: string;
}

/** The shape of a probe, injectable into HealthMonitor. Must not reject. */
export type ProbeFn = (options: ProbeOptions) => Promise<ProbeResult>;

/** A check body larger than this is cut off: the echo route answers a few bytes, and probes must stay cheap. */
const MAX_BODY = 64 * 1024;

/**
 * Fetches `checkUrl` through the proxy at `proxyHost:proxyPort`. Never throws and never outlives
 * `timeoutMs`: every socket it opened is destroyed when it settles. Uses fresh connections (no agent),
 * because a pooled connection would keep "proving" a proxy that no longer accepts new ones.
 */
export function probeThroughProxy(o: ProbeOptions): Promise<ProbeResult> {
    const started = performance.now();
    return new Promise((resolve) => {
        const open: { destroy(): void }[] = [];
        let settled = false;
        const finish = (r: Omit<ProbeResult, "latencyMs">) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            for (const s of open) s.destroy();
            resolve({ ...r, latencyMs: Math.round((performance.now() - started) * 10) / 10 });
        };
        const timer = setTimeout(() => finish({ ok: false, error: `timed out after ${o.timeoutMs} ms` }), o.timeoutMs);
        let url: URL;
        try {
            url = new URL(o.checkUrl);
            if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
        } catch {
            finish({ ok: false, error: `checkUrl ${JSON.stringify(o.checkUrl)} is not an http:// or https:// URL` });
            return;
        }
        const attempt: Attempt = {
            o,
            url,
            proxy: `proxy ${o.proxyHost}:${o.proxyPort}`,
            open,
            finish,
            fail: (what) => (e) =>
                finish({
                    ok: false,
                    error: `${what}: ${e.code ?? e.message}${e.code && e.message && !e.message.includes(e.code) ? ` (${e.message})` : ""}`,
                }),
            headers: {
                host: url.host,
                accept: "application/json",
                "user-agent": "egress-health/1",
                connection: "close",
            },
            proxyHeaders: o.proxyAuth ? { "proxy-authorization": proxyAuthorization(o.proxyAuth) } : {},
        };
        if (url.protocol === "http:") getThroughProxy(attempt);
        else getThroughTunnel(attempt);
    });
}

/** One probe in flight: what it asks, the sockets it opened (destroyed when it ends), and how it ends (once). */
interface Attempt {
    o: ProbeOptions;
    url: URL;
    /** "proxy host:port", for messages. */
    proxy: string;
    open: { destroy(): void }[];
    finish(r: Omit<ProbeResult, "latencyMs">): void;
    /** An error handler that ends the probe with `what` failed, and why. */
    fail(what: string): (e: NodeJS.ErrnoException) => void;
    /** The check request's headers. */
    headers: Record<string, string>;
    /** Headers for the proxy only (its credentials). */
    proxyHeaders: Record<string, string>;
}

/** A request to the proxy; to a TLS proxy, the same request over TLS (identity checked against the proxy's host). */
function toProxy(o: ProbeOptions, opts: http.RequestOptions): http.ClientRequest {
    const bareProxy = o.proxyHost.replace(/^\[|\]$/g, "");
    return o.proxyTls
        ? https.request({
              ...opts,
              servername: net.isIP(bareProxy) ? undefined : bareProxy,
              ca: o.ca,
              rejectUnauthorized: o.rejectUnauthorized ?? true,
          })
        : http.request(opts);
}

/** An http:// check URL: one absolute-form GET to the proxy. */
function getThroughProxy(a: Attempt): void {
    const req = toProxy(a.o, {
        host: a.o.proxyHost,
        port: a.o.proxyPort,
        method: "GET",
        path: a.url.href,
        headers: { ...a.headers, ...a.proxyHeaders },
        agent: false,
    });
    req.on("response", checkResponse(a));
    a.open.push(req);
    req.on("error", a.fail(`GET through ${a.proxy}`));
    req.end();
}

/** An https:// check URL: a CONNECT tunnel through the proxy, TLS to the target inside it, then the GET. */
function getThroughTunnel(a: Attempt): void {
    const { o, url, proxy } = a;
    const authority = `${url.hostname}:${url.port || 443}`;
    const connect = toProxy(o, {
        host: o.proxyHost,
        port: o.proxyPort,
        method: "CONNECT",
        path: authority,
        headers: { host: authority, ...a.proxyHeaders },
        agent: false,
    });
    a.open.push(connect);
    connect.on("error", a.fail(`CONNECT through ${proxy}`));
    connect.on("connect", (res, socket) => {
        a.open.push(socket);
        if (res.statusCode !== 200) {
            a.finish({
                ok: false,
                status: res.statusCode,
                error: `${proxy} refused CONNECT ${authority} with ${res.statusCode}`,
            });
            return;
        }
        const bare = url.hostname.replace(/^\[|\]$/g, "");
        const secure = tls.connect({
            socket,
            // Identity is checked against `host` when there is no servername (IP literals).
            host: bare,
            // SNI must not carry an IP literal (RFC 6066).
            servername: net.isIP(bare) ? undefined : bare,
            ca: o.ca,
            rejectUnauthorized: o.rejectUnauthorized ?? true,
        });
        a.open.push(secure);
        secure.on("error", a.fail(`TLS to ${url.host} through ${proxy}`));
        // No `agent` here on purpose: with `agent: false` Node builds a fresh Agent that ignores
        // createConnection and dials the target directly, bypassing the proxy.
        const req = https.request(
            {
                host: bare,
                port: url.port || 443,
                method: "GET",
                path: url.pathname + url.search,
                headers: a.headers,
                createConnection: () => secure,
            },
            checkResponse(a),
        );
        a.open.push(req);
        req.on("error", a.fail(`GET ${url.host} through ${proxy}`));
        req.end();
    });
    connect.end();
}

/** Reads the check's answer (its first MAX_BODY bytes) and ends the probe: ok on a 2xx, with the exit IP it names. */
function checkResponse(a: Attempt): (res: http.IncomingMessage) => void {
    return (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
            if (size < MAX_BODY) chunks.push(c);
            size += c.length;
        });
        res.on("error", a.fail("reading the check response"));
        res.on("end", () => {
            const status = res.statusCode ?? 0;
            const egressIp = egressIpOf(Buffer.concat(chunks).subarray(0, MAX_BODY).toString("utf8"));
            const ok = status >= 200 && status < 300;
            a.finish({
                ok,
                status,
                ...(egressIp && { egressIp }),
                ...(!ok && { error: `${a.url.origin} answered ${status} through ${a.proxy}` }),
            });
        });
    };
}

/** A `Proxy-Authorization` header value (basic auth) for proxy credentials. */
export function proxyAuthorization(credentials: { username: string; password: string }): string {
    return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`, "utf8").toString("base64")}`;
}

/** `ip` of a JSON object body, if it is a string that looks like an address. */
function egressIpOf(body: string): string | undefined {
    try {
        const ip = (JSON.parse(body) as { ip?: unknown } | null)?.ip;
        return typeof ip === "string" && net.isIP(ip) ? ip : undefined;
    } catch {
        return undefined;
    }
}
