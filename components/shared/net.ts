/** Network helpers every kind may use. Plain functions that `require` inside: dynamic providers serialize them. */

/**
 * Resolves true if something accepts TCP connections on `host:port` (default 127.0.0.1) within the
 * timeout. When it does not, `whyNot` (if given) hears the reason: the socket error, or the timeout.
 */
export function portAnswers(
    port: number,
    timeoutMs = 1000,
    host = "127.0.0.1",
    whyNot?: (reason: string) => void,
): Promise<boolean> {
    const net = require("node:net") as typeof import("node:net");
    return new Promise((resolve) => {
        const sock = net.connect({ host, port });
        const done = (ok: boolean, reason?: string) => {
            sock.destroy();
            if (!ok && reason !== undefined) whyNot?.(reason);
            resolve(ok);
        };
        sock.setTimeout(timeoutMs, () => done(false, `no answer within ${timeoutMs} ms`));
        sock.once("connect", () => done(true));
        sock.once("error", (e) => done(false, e.message));
    });
}
