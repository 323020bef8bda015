/**
 * Lease+release throughput and latency against the running service (real createApp over 1,000
 * synthetic members), printed as a table.
 *
 *   node dist/bench/service.js [--seconds 5] [--concurrency 1,16,64] [--members 1000] [--pools 4]
 *                              [--client raw|node-http|both] [--log-level warn] [--service-args="--cpu-prof"] [--bare]
 *
 * The service runs in a child process (bench/synthetic-service.ts) and the load generator here, so on
 * a 2-core machine each gets a core, as a crawler fleet and the service would on separate hosts.
 * `--bare` adds rows for a bare node:http handler over the same Fleet (no auth, validation, metrics or
 * logging): not the service, but the ceiling HTTP itself sets on this machine.
 * `--service-args` passes node flags to the child (with `=`: --service-args="--cpu-prof --cpu-prof-dir=/tmp/prof").
 */
import * as os from "node:os";
import { parseArgs } from "node:util";
import { BenchResult, formatTable, HttpClientKind, runHttpBench } from "./leases";
import { forkSyntheticService, randomToken } from "./synthetic-service";

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            seconds: { type: "string", default: "5" },
            concurrency: { type: "string", default: "1,16,64" },
            members: { type: "string", default: "1000" },
            pools: { type: "string", default: "4" },
            client: { type: "string", default: "raw" },
            "log-level": { type: "string", default: "warn" },
            "service-args": { type: "string", default: "" },
            bare: { type: "boolean", default: false },
            json: { type: "boolean", default: false },
        },
    });
    const positive = (v: string, name: string) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive whole number, got ${v}`);
        return n;
    };
    const seconds = Math.min(10, positive(values.seconds!, "seconds"));
    const concurrencies = values.concurrency!.split(",").map((c) => positive(c, "concurrency"));
    const clients: HttpClientKind[] =
        values.client === "both" ? ["raw", "node-http"] : [values.client as HttpClientKind];
    if (!clients.every((c) => c === "raw" || c === "node-http"))
        throw new Error(`--client must be raw, node-http or both, got ${values.client}`);
    const token = randomToken();
    const members = positive(values.members!, "members");
    const rows: BenchResult[] = [];
    for (const bare of values.bare ? [false, true] : [false]) {
        const opts = { token, members, pools: positive(values.pools!, "pools"), logLevel: values["log-level"], bare };
        const child = await forkSyntheticService(opts, values["service-args"]!.split(" ").filter(Boolean));
        try {
            for (const client of clients)
                for (const concurrency of concurrencies) {
                    const r = await runHttpBench({
                        url: `http://127.0.0.1:${child.port}`,
                        token,
                        concurrency,
                        seconds,
                        client,
                    });
                    r.mode = `${bare ? "bare node:http (ceiling)" : "service"}, ${members} members, ${r.mode}`;
                    rows.push(r);
                    if (!values.json) process.stderr.write(".");
                }
        } finally {
            await child.stop();
        }
    }
    if (values.json) return console.log(JSON.stringify(rows, null, 2));
    const cpus = os.cpus();
    console.log(
        `\nnode ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? "?"}; service log level ${values["log-level"]}; ${seconds}s per row\n`,
    );
    console.log(formatTable(rows));
}

main().catch((err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
});
