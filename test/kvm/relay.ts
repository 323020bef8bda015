/**
 * A TCP relay on 127.0.0.1 in front of the sandbox's sshd, for tests that need the link to a host to be
 * slow or to break: `bytesPerSecond` throttles each connection towards the host (so an upload takes a
 * while); a connection that has carried more than `cutAfter` bytes towards the host is cut — nothing more
 * is forwarded either way and both sockets stay open, no FIN, no RST, as a pulled cable looks. Connections
 * opened later pass again (the host is back for the next command).
 */
import * as net from "node:net";
import type { Sandbox } from "./sandbox";

export interface Relay {
    port: number;
    /** The sandbox's known_hosts line for the relay's port (the host key is the sandbox's). */
    knownHosts: string;
    /** Connections cut so far. */
    cuts(): number;
    /** The most bytes any one connection has carried towards the host. */
    mostUp(): number;
    close(): void;
}

export async function sshRelay(sb: Sandbox, opts: { cutAfter?: number; bytesPerSecond?: number } = {}): Promise<Relay> {
    const sockets = new Set<net.Socket>();
    let cuts = 0;
    let mostUp = 0;
    const server = net.createServer((client) => {
        const host = net.connect(sb.sshPort, "127.0.0.1");
        for (const s of [client, host]) {
            sockets.add(s);
            s.on("error", () => undefined);
            s.on("close", () => sockets.delete(s));
        }
        let up = 0;
        let cut = false;
        const queue: Buffer[] = [];
        const forward = (d: Buffer) => {
            if (cut) return;
            if (opts.cutAfter !== undefined && up + d.length > opts.cutAfter) {
                cut = true;
                cuts++;
                client.pause();
                return;
            }
            up += d.length;
            mostUp = Math.max(mostUp, up);
            host.write(d);
        };
        // Throttled: a tick every 50 ms forwards a twentieth of the rate; the client is paused while a backlog waits.
        const tick = opts.bytesPerSecond
            ? setInterval(() => {
                  let budget = Math.floor(opts.bytesPerSecond! / 20);
                  while (budget > 0 && queue.length) {
                      const head = queue[0];
                      if (head.length <= budget) {
                          queue.shift();
                          budget -= head.length;
                          forward(head);
                      } else {
                          forward(head.subarray(0, budget));
                          queue[0] = head.subarray(budget);
                          budget = 0;
                      }
                  }
                  if (queue.length === 0 && !cut) client.resume();
              }, 50)
            : undefined;
        client.on("data", (d) => {
            if (!tick) return forward(d);
            queue.push(d);
            client.pause();
        });
        host.on("data", (d) => void (cut || client.write(d)));
        client.on("end", () => void (cut || host.end()));
        host.on("end", () => void (cut || client.end()));
        client.on("close", () => clearInterval(tick));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    return {
        port,
        knownHosts: sb.knownHosts.replace(`[127.0.0.1]:${sb.sshPort}`, `[127.0.0.1]:${port}`),
        cuts: () => cuts,
        mostUp: () => mostUp,
        close: () => (sockets.forEach((s) => s.destroy()), server.close()),
    };
}
