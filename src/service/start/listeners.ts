import * as http from "node:http";
import * as https from "node:https";
import type { Logger } from "pino";
import { answerProtocolErrors } from "../api/protocol-errors";
import type { Gateway } from "../gateway";
import type { ServeOptions } from "./options";
import { readTlsPair, type TlsPair } from "./tls";

/**
 * The service's listeners: the API (plain HTTP, or HTTPS when `tls` gives a certificate and key) and
 * the gateway's ports. A port that is taken fails the start at once, naming the flag that moves it.
 */

export interface ApiListener {
    server: http.Server | https.Server;
    port: number;
    /** `http://host:port`, or `https://` with TLS. */
    url: string;
    /** The certificate and key in use at start (the gateway's TLS port serves the same). */
    tls?: TlsPair;
    /**
     * The probes' default check URL: this service's `/v1/echo` on loopback, and over TLS not verified:
     * the operator's certificate names the service's public name, not 127.0.0.1 (docs/decisions/0080-tls.md).
     */
    checkUrl: string;
    checkTls?: { rejectUnauthorized: boolean };
}

export async function listenApi(opts: ServeOptions, log: Logger): Promise<ApiListener> {
    const pair = opts.tls && readTlsPair(opts.tls);
    const server = pair ? https.createServer({ cert: pair.cert, key: pair.key }) : http.createServer();
    answerProtocolErrors(server as http.Server, log);
    const host = opts.host ?? "127.0.0.1";
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(opts.port ?? 8080, host, () => resolve());
    });
    const port = (server.address() as { port: number }).port;
    const scheme = pair ? "https" : "http";
    return {
        server,
        port,
        url: `${scheme}://${host}:${port}`,
        tls: pair,
        checkUrl: opts.checkUrl ?? `${scheme}://127.0.0.1:${port}/v1/echo`,
        checkTls: pair && !opts.checkUrl ? { rejectUnauthorized: false } : undefined,
    };
}

/** Listens on the gateway's ports; a taken one is said plainly, with the option that changes it. */
export async function listenGateway(gateway: Gateway, at: NonNullable<ServeOptions["gateway"]>) {
    try {
        return await gateway.listen();
    } catch (e) {
        const err = e as NodeJS.ErrnoException & { port?: number };
        if (err.code === "EADDRINUSE") {
            const sticky = at.stickyPorts?.find(
                (r) => err.port !== undefined && r.from <= err.port && err.port <= r.to,
            );
            if (sticky)
                throw new Error(
                    `the gateway's sticky port ${at.host ?? "127.0.0.1"}:${err.port} (--gateway-sticky-ports "${sticky.rule}") is in use: pick a free range`,
                );
            const flags = [
                [at.port, "--gateway-port"],
                [at.socksPort, "--socks-port"],
                [at.tlsPort, "--gateway-tls-port"],
            ] as const;
            const [port, flag] = flags.find(([p]) => p !== undefined && p === err.port) ?? flags[0];
            throw new Error(
                `the gateway's port ${at.host ?? "127.0.0.1"}:${port} is in use (another egress serve?): pick another with ${flag}, or 0 for none`,
            );
        }
        throw e;
    }
}
