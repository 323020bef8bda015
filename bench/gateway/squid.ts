/**
 * squid as the rotating gateway an infra team would build instead of ours: a parent-chaining proxy
 * that sends every request (and CONNECT) round-robin to the same local members the gateway uses,
 * never direct, caching nothing. Started by bench/gateway.ts per concurrency, stopped after its rows.
 * Debian's squid (`apt-get install squid`; scripts/install-test-deps.sh installs it); missing: it throws.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { freeLoopbackPort } from "../../test/helpers/net";
import { squidBin, squidStateLines, startSquidIn } from "../../test/helpers/squid";

/** The whole squid.conf: listen on 127.0.0.1:`port`, `members` as round-robin parents, state in `dir`. */
export function squidParentConf(o: { port: number; members: readonly string[]; dir: string }): string {
    const peers = o.members.map((url, i) => {
        const u = new URL(url);
        // name=: several parents on one host need their own names.
        return `cache_peer ${u.hostname} parent ${u.port} 0 no-query no-digest round-robin name=member${i}`;
    });
    return [
        `http_port 127.0.0.1:${o.port}`,
        ...peers,
        "never_direct allow all",
        "http_access allow localhost",
        "http_access deny all",
        "cache deny all",
        ...squidStateLines(o.dir),
        "",
    ].join("\n");
}

export interface BenchSquid {
    port: number;
    /** squid's process (run with -N: one process), for its CPU per request. */
    pid: number;
    stop(): Promise<void>;
}

/** squid over `members`, once it answers GET `probeUrl` through them; throws with its log when it does not start. */
export async function startSquid(members: readonly string[], probeUrl: string): Promise<BenchSquid> {
    squidBin(); // before anything is made: a missing squid fails the run at once
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-bench-squid-"));
    const port = await freeLoopbackPort();
    fs.writeFileSync(path.join(dir, "squid.conf"), squidParentConf({ port, members, dir }));
    const { stop, pid } = await startSquidIn(dir, async () => (await probe(port, probeUrl)) === 200);
    return { port, pid, stop };
}

/** One GET of `url` through the proxy on `port`: its status, 0 without an answer. */
function probe(port: number, url: string): Promise<number> {
    return new Promise((resolve) => {
        const req = http.request({ host: "127.0.0.1", port, path: url, agent: false }, (res) => {
            res.resume().on("end", () => resolve(res.statusCode!));
        });
        req.setTimeout(1000, () => req.destroy());
        req.on("error", () => resolve(0)).end();
    });
}
