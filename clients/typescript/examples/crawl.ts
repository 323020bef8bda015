/**
 * A crawler loop: one leased proxy per page, requests through it with undici's ProxyAgent, the lease
 * released with what happened (ok / blocked / error). Run it:
 *   EGRESS_URL=http://127.0.0.1:8080 EGRESS_TOKEN=… node dist/clients/typescript/examples/crawl.js https://example.com/ …
 */
import { fetch, ProxyAgent } from "undici";
import { Blocked, EgressClient } from "../src";

export interface Page {
    url: string;
    status: number | "blocked" | "error";
    proxy?: string;
    bytes?: number;
}

export async function crawl(urls: string[], opts: { baseUrl: string; token: string; pool?: string }): Promise<Page[]> {
    const egress = new EgressClient({ baseUrl: opts.baseUrl, token: opts.token });
    const pages: Page[] = [];
    for (const url of urls) {
        const target = new URL(url).hostname; // per-target cooldown: this site does not see the same proxy again soon
        let via: string | undefined;
        try {
            const page = await egress.withProxy(
                opts.pool,
                target,
                async (proxy) => {
                    // proxy.url carries the credentials of a pool with `auth` (ProxyAgent sends them): never show them.
                    via = proxy.url.replace(/\/\/[^@/]*@/, "//");
                    const agent = new ProxyAgent(proxy.url);
                    try {
                        const res = await fetch(url, { dispatcher: agent, signal: AbortSignal.timeout(15_000) });
                        const body = await res.text();
                        if (res.status === 403 || res.status === 429)
                            throw new Blocked(`${url} answered ${res.status}`);
                        return { url, status: res.status, proxy: via, bytes: body.length };
                    } finally {
                        await agent.close();
                    }
                },
                { maxWaitMs: 60_000 },
            );
            pages.push(page);
        } catch (e) {
            // Released already (blocked or error); the next page gets another proxy.
            pages.push({ url, status: e instanceof Blocked ? "blocked" : "error", proxy: via });
        }
    }
    return pages;
}

if (require.main === module) {
    const { EGRESS_URL, EGRESS_TOKEN, EGRESS_POOL } = process.env;
    if (!EGRESS_URL || !EGRESS_TOKEN) throw new Error("set EGRESS_URL and EGRESS_TOKEN (a token with the lease scope)");
    crawl(process.argv.slice(2), { baseUrl: EGRESS_URL, token: EGRESS_TOKEN, pool: EGRESS_POOL }).then((pages) => {
        for (const p of pages) console.log(`${p.status} ${p.url} via ${p.proxy ?? "-"}`);
    });
}
