/**
 * How long the real engine takes to bring up, re-apply and destroy N local proxies.
 * Run: node dist/bench/local-up.js [3,20]
 * Prints a table; uses a throwaway project (its own backend and passphrase).
 */
import { tempProject } from "../test/helpers/project";

async function measure(n: number): Promise<Record<string, string>> {
    const config = {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "bench", provider: "local", replicas: n, maxReplicas: 1000 }],
    };
    const p = tempProject("bench", config);
    try {
        const t = async (fn: () => Promise<unknown>) => {
            const s = Date.now();
            await fn();
            return ((Date.now() - s) / 1000).toFixed(1) + " s";
        };
        const up = await t(() => p.driver.up({ refresh: false }));
        const noop = await t(() => p.driver.up());
        const proxies = (await p.driver.proxies()).length;
        const destroy = await t(() => p.driver.destroy());
        return { proxies: String(proxies), "up (create)": up, "up again (refresh, no changes)": noop, destroy };
    } finally {
        p.cleanup();
    }
}

async function main(): Promise<void> {
    const sizes = (process.argv[2] ?? "3,20").split(",").map(Number);
    const rows: Record<string, string>[] = [];
    for (const n of sizes) rows.push({ n: String(n), ...(await measure(n)) });
    const cols = Object.keys(rows[0]);
    const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
    const line = (vals: string[]) => "| " + vals.map((v, i) => v.padEnd(w[i])).join(" | ") + " |";
    console.log(line(cols));
    console.log("|" + w.map((x) => "-".repeat(x + 2)).join("|") + "|");
    for (const r of rows) console.log(line(cols.map((c) => r[c])));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
