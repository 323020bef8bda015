import * as http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A check URL for probes run outside the service (the CLI's rolling change, src/cli/rolling.ts): a
 * loopback server answering every GET with `{"ip": <the caller's address>}`, like the service's
 * `/v1/echo`. Reachable from local proxies only, as the service's default is.
 */
export async function startLoopbackEcho(): Promise<{ url: string; close(): Promise<void> }> {
    const server = http.createServer((req, res) => {
        res.writeHead(200, { "content-type": "application/json", connection: "close" });
        res.end(JSON.stringify({ ip: (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "") }));
    });
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", resolve);
    });
    return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/echo`,
        close: () =>
            new Promise<void>((resolve) => {
                server.closeAllConnections();
                server.close(() => resolve());
            }),
    };
}
