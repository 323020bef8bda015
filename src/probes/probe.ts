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
        const proxy = `proxy ${o.proxyHost}:${o.proxyPort}`;
        // To a TLS proxy: the same requests over TLS (identity checked against the proxy's host).
        const bareProxy = o.proxyHost.replace(/^\[|\]$/g, "");
        const toProxy = (opts: http.RequestOptions) =>
            o.proxyTls
                ? https.request({
                      ...opts,
                      servername: net.isIP(bareProxy) ? undefined : bareProxy,
                      ca: o.ca,
                      rejectUnauthorized: o.rejectUnauthorized ?? true,
                  })
                : http.request(opts);
        const fail = (what: string) => (e: NodeJS.ErrnoException) =>
            finish({
                ok: false,
                error: `${what}: ${e.code ?? e.message}${e.code && e.message && !e.message.includes(e.code) ? ` (${e.message})` : ""}`,
            });

        let url: URL;
        try {
            url = new URL(o.checkUrl);
            if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
        } catch {
            finish({ ok: false, error: `checkUrl ${JSON.stringify(o.checkUrl)} is not an http:// or https:// URL` });
            return;
        }
        const headers = {
            host: url.host,
            accept: "application/json",
            "user-agent": "egress-health/1",
            connection: "close",
        };
        const proxyHeaders: Record<string, string> = o.proxyAuth
            ? { "proxy-authorization": proxyAuthorization(o.proxyAuth) }
            : {};
        const onResponse = (res: http.IncomingMessage) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on("data", (c: Buffer) => {
                if (size < MAX_BODY) chunks.push(c);
                size += c.length;
            });
            res.on("error", fail("reading the check response"));
            res.on("end", () => {
                const status = res.statusCode ?? 0;
                const egressIp = egressIpOf(Buffer.concat(chunks).subarray(0, MAX_BODY).toString("utf8"));
                const ok = status >= 200 && status < 300;
                finish({
                    ok,
                    status,
                    ...(egressIp && { egressIp }),
                    ...(!ok && { error: `${url.origin} answered ${status} through ${proxy}` }),
                });
            });
        };

        if (url.protocol === "http:") {
            const req = toProxy({
                host: o.proxyHost,
                port: o.proxyPort,
                method: "GET",
                path: url.href,
                headers: { ...headers, ...proxyHeaders },
                agent: false,
            });
            req.on("response", onResponse);
            open.push(req);
            req.on("error", fail(`GET through ${proxy}`));
            req.end();
            return;
        }
        const authority = `${url.hostname}:${url.port || 443}`;
        const connect = toProxy({
            host: o.proxyHost,
            port: o.proxyPort,
            method: "CONNECT",
            path: authority,
            headers: { host: authority, ...proxyHeaders },
            agent: false,
        });
        open.push(connect);
        connect.on("error", fail(`CONNECT through ${proxy}`));
        connect.on("connect", (res, socket) => {
            open.push(socket);
            if (res.statusCode !== 200) {
                finish({
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
            open.push(secure);
            secure.on("error", fail(`TLS to ${url.host} through ${proxy}`));
            // No `agent` here on purpose: with `agent: false` Node builds a fresh Agent that ignores
            // createConnection and dials the target directly, bypassing the proxy.
            const req = https.request(
                {
                    host: bare,
                    port: url.port || 443,
                    method: "GET",
                    path: url.pathname + url.search,
                    headers,
                    createConnection: () => secure,
                },
                onResponse,
            );
            open.push(req);
            req.on("error", fail(`GET ${url.host} through ${proxy}`));
            req.end();
        });
        connect.end();
    });
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
