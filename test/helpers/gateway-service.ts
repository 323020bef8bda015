/**
 * The service the gateway's own tests run against (test/service/gateway.test.ts, gateway-connect.test.ts):
 * three local proxies, the gateway on loopback, a loopback origin that answers 200/403/429/500, a
 * block-marker header and a slow stream, and a loopback TCP echo server as a CONNECT target. A `limited`
 * token (LIMITED) may hold one gateway request at a time. `withGatewayService` makes them before the
 * file's tests and closes them after; `set` hands them to the file's variables once they exist. It
 * returns the file's ways of talking to the gateway, bound to them.
 */
import { after, before } from "node:test";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import { closedPort } from "../fixtures/ports";
import * as os from "node:os";
import * as path from "node:path";
import { listenLoopback, type ProxiedAnswer, viaProxy } from "./net";
import { find, parseSamples } from "./metrics";
import { settledConverge, startTestService, TestService, tokenEntries, TOKENS } from "./service";
import { sha256 } from "../../src/service/http/auth";
import { waitFor } from "./harness";

export const LIMITED = "tok-limited-0123456789abcdef";

export interface GatewayService {
    svc: TestService;
    origin: Awaited<ReturnType<typeof listenLoopback>>;
    echo: net.Server;
    echoPort: number;
    closedPort: number;
    /** The origin's answers to /slow still open. */
    hanging: Set<http.ServerResponse>;
}

export const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;

export function withGatewayService(set: (made: GatewayService) => void) {
    const made: Partial<GatewayService> & Pick<GatewayService, "hanging"> = { hanging: new Set() };
    const hanging = made.hanging;
    before(async () => {
        made.origin = await listenLoopback(
            http.createServer((req, res) => {
                const p = new URL(req.url!, "http://x").pathname;
                if (p === "/slow") {
                    // A head and one chunk, then nothing until the test lets go: a download in progress.
                    res.writeHead(200, { "content-type": "text/plain" });
                    res.write("first chunk\n");
                    hanging.add(res);
                    res.once("close", () => hanging.delete(res));
                    return;
                }
                const status = /^\/(\d{3})$/.exec(p)?.[1];
                const headers: Record<string, string> = { "content-type": "text/plain" };
                if (p === "/marker") headers["x-blocked-by"] = "a CDN challenge";
                res.writeHead(status ? Number(status) : 200, headers);
                res.end(`origin ${p}`);
            }),
        );
        const echo = (made.echo = net.createServer((s) => s.pipe(s)));
        await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
        made.echoPort = (echo.address() as net.AddressInfo).port;
        // A port nothing listens on, below the ephemeral range (no listen(0) elsewhere is given it): the
        // members' connections to it are refused.
        made.closedPort = await closedPort();

        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-gw-tokens-"));
        const tokensFile = path.join(dir, "tokens.json");
        fs.writeFileSync(
            tokensFile,
            JSON.stringify({
                tokens: [
                    ...tokenEntries(),
                    {
                        name: "limited",
                        sha256: sha256(LIMITED).toString("hex"),
                        scopes: ["lease"],
                        gatewayConcurrency: 1,
                    },
                ],
            }),
        );
        const svc = (made.svc = await startTestService(
            {
                "egress:providers": { local: { type: "local" } },
                "egress:pools": [{ name: "web", provider: "local", replicas: 3, maxReplicas: 3 }],
            },
            {
                tokensFile,
                targetCooldownSeconds: 0,
                // waitMs 0: these tests check the answers at once (the wait is test/service/gateway-one-site.test.ts's).
                gateway: {
                    port: 0,
                    waitMs: 0,
                    blockRules: { statuses: [403, 429], headers: [{ name: "x-blocked-by" }] },
                },
            },
        ));
        await settledConverge(svc);
        await waitFor(
            "3 healthy",
            async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 3,
            30_000,
        );
        set(made as GatewayService);
    });

    after(async () => {
        for (const r of hanging) r.destroy();
        await made.svc?.close();
        await made.origin?.close();
        await new Promise((r) => made.echo?.close(r));
    });

    const svc = () => made.svc!;
    const o = (p: string) => `http://127.0.0.1:${made.origin!.port}${p}`;

    /** One request through the gateway (absolute-form), on its own connection. */
    function viaGateway(
        url: string,
        auth: string | null = basic("web", TOKENS.lease),
        method = "GET",
    ): Promise<ProxiedAnswer> {
        return viaProxy(svc().gatewayPort!, url, auth, method);
    }

    /** Opens a request whose answer never ends (/slow); resolves once its first chunk arrived. */
    function slow(auth = basic("web", TOKENS.lease)): Promise<{ res: http.IncomingMessage; req: http.ClientRequest }> {
        return new Promise((resolve, reject) => {
            const req = http.request(
                {
                    host: "127.0.0.1",
                    port: svc().gatewayPort,
                    path: o("/slow"),
                    headers: { "proxy-authorization": auth },
                    agent: false,
                },
                (res) => {
                    if (res.statusCode !== 200) return reject(new Error(`slow: ${res.statusCode}`));
                    res.once("data", () => resolve({ res, req }));
                },
            );
            req.on("error", () => undefined).end();
        });
    }

    /** A raw request line (and headers) on a fresh socket; the whole answer as text. */
    function raw(text: string): Promise<string> {
        return new Promise((resolve, reject) => {
            const s = net.connect(svc().gatewayPort!, "127.0.0.1", () => s.write(text));
            let got = "";
            s.setEncoding("utf8")
                .on("data", (d) => (got += d))
                .on("end", () => resolve(got))
                .on("error", reject);
        });
    }

    /** A CONNECT tunnel to the echo server; resolves with the socket once the gateway answered 200. */
    function tunnel(user: string): Promise<{ status: number; socket: net.Socket }> {
        return new Promise((resolve, reject) => {
            const req = http.request({
                host: "127.0.0.1",
                port: svc().gatewayPort,
                method: "CONNECT",
                path: `127.0.0.1:${made.echoPort}`,
                headers: { "proxy-authorization": basic(user, TOKENS.lease) },
                agent: false,
            });
            req.on("connect", (res, socket) => resolve({ status: res.statusCode!, socket }));
            req.on("error", reject).end();
        });
    }

    const samples = async () => parseSamples(String((await svc().call("GET", "/metrics", { token: null })).body));
    const count = async (labels: Record<string, string>) =>
        find(await samples(), "egress_gateway_requests_total", { pool: "web", ...labels }).reduce(
            (a, s) => a + s.value,
            0,
        );
    const activeLeases = async () => (await svc().call("GET", "/v1/leases")).body.leases as unknown[];
    const noLeases = () => waitFor("no active leases", async () => (await activeLeases()).length === 0, 10_000, 50);

    return { o, viaGateway, slow, raw, tunnel, samples, count, activeLeases, noLeases };
}
