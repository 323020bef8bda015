import * as http from "node:http";
import * as https from "node:https";
import type * as net from "node:net";
import type { Socket } from "node:net";
import { clientErrorAnswer, rawAnswer } from "./answers";
import { tagClient, type TaggedSocket } from "./flight";
import type { GatewayOptions } from "./options";

/**
 * The gateway's HTTP front door: a forward proxy's listener (absolute-form requests and CONNECT), its
 * limits and its answers to requests Node's parser gave up on; with `tls`, the same over TLS (a client's
 * `--proxy https://…`: its credentials cross the network encrypted). The requests themselves are the
 * gateway's (server.ts).
 */
export interface HttpFrontGateway {
    request(req: http.IncomingMessage, res: http.ServerResponse): void;
    httpConnect(req: http.IncomingMessage, socket: Socket, head: Buffer): void;
}

export function createHttpFront(
    gw: HttpFrontGateway,
    o: Pick<GatewayOptions, "headersTimeoutMs" | "metrics">,
    sockets: Set<net.Socket>,
    tls?: { cert: Buffer; key: Buffer },
): http.Server | https.Server {
    // A client gets headersTimeout for its head (then 408); its body and a tunnel may take as long as
    // they need (requestTimeout off), as through any forward proxy. Heads are checked every second.
    const headersTimeout = o.headersTimeoutMs ?? 10_000;
    const options = { connectionsCheckingInterval: 1000, requestTimeout: 0 };
    const server = tls
        ? https.createServer({ ...options, cert: tls.cert, key: tls.key, handshakeTimeout: headersTimeout })
        : http.createServer(options);
    server.headersTimeout = headersTimeout;
    server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
        if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
        const { code, message } = clientErrorAnswer(err);
        o.metrics.refused(code);
        rawAnswer(socket, code, message);
    });
    server.on("connection", (s: TaggedSocket) => {
        sockets.add(s);
        s.once("close", () => sockets.delete(s));
        // A tunnel's socket is no longer node's HTTP server's: its errors must not go unheard (tagClient).
        // Over TLS, requests and tunnels run on the TLS socket on top of this one: that one is tagged.
        if (tls) s.on("error", () => undefined);
        else tagClient(s);
    });
    if (tls) server.on("secureConnection", (s: TaggedSocket) => tagClient(s));
    server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => gw.request(req, res));
    server.on("connect", (req: http.IncomingMessage, socket: Socket, head: Buffer) =>
        gw.httpConnect(req, socket, head),
    );
    return server;
}

/** Listens on `port` at `host` (0: a free port); a failure to listen rejects. */
export async function listenOn(server: net.Server, port: number, host: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
            server.off("error", reject);
            resolve();
        });
    });
}
