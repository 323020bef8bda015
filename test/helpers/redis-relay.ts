/**
 * A loopback TCP relay in front of a real redis-server, for what a test must do to one client's
 * connection only: record what it sends, hold Redis' replies back, or cut it off from Redis (a network
 * partition of one replica, while the others reach Redis directly).
 */
import * as net from "node:net";

export class RedisRelay {
    /** Every chunk a client wrote, as latin1 text (RESP). */
    readonly chunks: string[] = [];
    private held: { client: net.Socket; data: Buffer }[] = [];
    private holding = false;
    private readonly sockets = new Set<net.Socket>();
    private readonly server: net.Server;
    private port = 0;

    constructor(redisPort: number) {
        this.server = net.createServer((client) => {
            const up = net.connect(redisPort, "127.0.0.1");
            for (const s of [client, up]) {
                this.sockets.add(s);
                s.on("error", () => undefined); // the client's own close and Redis' cleanup end them
                s.on("close", () => (client.destroy(), up.destroy(), this.sockets.delete(s)));
            }
            client.on("data", (d: Buffer) => {
                this.chunks.push(d.toString("latin1"));
                up.write(d);
            });
            up.on("data", (d: Buffer) => (this.holding ? this.held.push({ client, data: d }) : client.write(d)));
        });
    }

    /** Listens on `port` (a closed relay's, to end the cut), else a free loopback port; returns it. */
    async listen(port = 0): Promise<number> {
        await new Promise<void>((r) => this.server.listen(port, "127.0.0.1", () => r()));
        return (this.port = (this.server.address() as net.AddressInfo).port);
    }

    /** `url` (a redis:// URL of the server behind) with this relay's port instead. */
    via(url: string): string {
        const u = new URL(url);
        u.port = String(this.port);
        return u.toString();
    }

    hold(): void {
        this.holding = true;
    }

    flush(): void {
        this.holding = false;
        for (const { client, data } of this.held.splice(0)) client.write(data);
    }

    /** Cuts every connection through the relay and refuses new ones: the client is cut off from Redis. */
    close(): void {
        this.server.close();
        for (const s of this.sockets) s.destroy();
    }
}
