/**
 * How much the service logs under a lease storm that mostly gets 503 none_available: the real app
 * (bench/synthetic-service.ts) with its real logger writing to a file, driven by more clients than
 * there are members, so most lease requests find nothing free. Prints requests by status, log bytes,
 * log lines, lines carrying a stack trace and bytes per request.
 *
 *   node dist/bench/log-volume.js [--requests 25000] [--clients 64] [--members 8] [--log-level info]
 *                                 [--bad-token-every 50] [--before <checkout>] [--json]
 *
 * `--before <dir>`: also measures another checkout (built, with this commit's
 * dist/bench/synthetic-service.js copied into its dist/bench/, since older ones cannot log to a file)
 * and prints it as the first row; see docs/bench.md for the exact steps.
 * Every `--bad-token-every`th lease request carries a wrong token (a 401, the commonest client mistake).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { RawHttpConnection } from "./http-client";
import { forkSyntheticService, randomToken } from "./synthetic-service";
import { benchTable } from "./table";

interface VolumeResult {
    build: string;
    logLevel: string;
    requests: number;
    byStatus: Record<string, number>;
    logBytes: number;
    logLines: number;
    stackLines: number;
    byLevel: Record<string, number>;
    seconds: number;
}

const LEVELS: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "warn", 50: "error", 60: "fatal" };

/** `clients` connections share one budget of `requests` lease requests; a granted lease is released at once. */
async function drive(
    port: number,
    token: string,
    requests: number,
    clients: number,
    badTokenEvery: number,
): Promise<Record<string, number>> {
    const byStatus: Record<string, number> = {};
    let sent = 0;
    const client = async () => {
        const c = await RawHttpConnection.open("127.0.0.1", port);
        const lease = c.request(
            "POST",
            "/v1/leases",
            `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n`,
            "{}",
        );
        const bad = c.request(
            "POST",
            "/v1/leases",
            `Authorization: Bearer ${token}x\r\nContent-Type: application/json\r\n`,
            "{}",
        );
        try {
            while (sent < requests) {
                sent++;
                const r = await c.send(badTokenEvery > 0 && sent % badTokenEvery === 0 ? bad : lease);
                byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
                if (r.status === 201) {
                    const id = JSON.parse(r.body).lease.id as string;
                    const rel = await c.send(
                        c.request(
                            "POST",
                            `/v1/leases/${id}/release`,
                            `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n`,
                            '{"outcome":"ok"}',
                        ),
                    );
                    if (rel.status !== 200) throw new Error(`release answered ${rel.status}: ${rel.body}`);
                } else if (r.status !== 503 && r.status !== 401) {
                    throw new Error(`lease answered ${r.status}: ${r.body}`);
                }
            }
        } finally {
            c.close();
        }
    };
    await Promise.all(Array.from({ length: clients }, client));
    return byStatus;
}

async function measure(
    build: string,
    script: string,
    o: { requests: number; clients: number; members: number; logLevel: string; badTokenEvery: number },
): Promise<VolumeResult> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-logvol-"));
    const logFile = path.join(dir, "service.log");
    const token = randomToken();
    try {
        const child = await forkSyntheticService(
            { token, members: o.members, pools: 1, logLevel: o.logLevel, logFile },
            [],
            script,
        );
        const t0 = performance.now();
        let byStatus: Record<string, number>;
        try {
            byStatus = await drive(child.port, token, o.requests, o.clients, o.badTokenEvery);
        } finally {
            await child.stop(); // the child writes synchronously, so the file is complete once it exited
        }
        const seconds = (performance.now() - t0) / 1000;
        const text = fs.readFileSync(logFile, "utf8");
        const lines = text.split("\n").filter(Boolean);
        const byLevel: Record<string, number> = {};
        for (const l of lines) {
            const n = JSON.parse(l).level as number;
            const level = LEVELS[n] ?? String(n);
            byLevel[level] = (byLevel[level] ?? 0) + 1;
        }
        return {
            build,
            logLevel: o.logLevel,
            requests: o.requests,
            byStatus,
            logBytes: Buffer.byteLength(text),
            logLines: lines.length,
            stackLines: lines.filter((l) => l.includes('"stack":')).length,
            byLevel,
            seconds,
        };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

function table(rows: VolumeResult[]): string {
    const head = [
        "build",
        "level",
        "lease requests",
        "201",
        "503",
        "401",
        "log bytes",
        "log lines",
        "lines w/ stack",
        "bytes/request",
        "lines by level",
    ];
    const n = (v: number) => v.toLocaleString("en-US");
    const body = rows.map((r) => [
        r.build,
        r.logLevel,
        n(r.requests),
        n(r.byStatus[201] ?? 0),
        n(r.byStatus[503] ?? 0),
        n(r.byStatus[401] ?? 0),
        n(r.logBytes),
        n(r.logLines),
        n(r.stackLines),
        (r.logBytes / r.requests).toFixed(1),
        Object.entries(r.byLevel)
            .map(([l, c]) => `${l}:${c}`)
            .join(" ") || "-",
    ]);
    return benchTable(head, body);
}

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            requests: { type: "string", default: "25000" },
            clients: { type: "string", default: "64" },
            members: { type: "string", default: "8" },
            "log-level": { type: "string", default: "info" },
            "bad-token-every": { type: "string", default: "50" },
            before: { type: "string" },
            json: { type: "boolean", default: false },
        },
    });
    const whole = (v: string, name: string, min: number) => {
        const x = Number(v);
        if (!Number.isInteger(x) || x < min) throw new Error(`--${name} must be a whole number ≥ ${min}, got ${v}`);
        return x;
    };
    const o = {
        requests: whole(values.requests!, "requests", 1),
        clients: whole(values.clients!, "clients", 1),
        members: whole(values.members!, "members", 1),
        logLevel: values["log-level"]!,
        badTokenEvery: whole(values["bad-token-every"]!, "bad-token-every", 0),
    };
    const builds: [string, string][] = [];
    if (values.before) {
        const script = path.resolve(values.before, "dist/bench/synthetic-service.js");
        if (!fs.existsSync(script))
            throw new Error(
                `--before: ${script} does not exist (build that checkout and copy this dist/bench/synthetic-service.js into it)`,
            );
        builds.push([`before (${path.basename(path.resolve(values.before))})`, script]);
    }
    builds.push(["this checkout", path.join(__dirname, "synthetic-service.js")]);
    const rows: VolumeResult[] = [];
    for (const [build, script] of builds) rows.push(await measure(build, script, o));
    if (values.json) return console.log(JSON.stringify(rows, null, 2));
    console.log(
        `\nnode ${process.version}; ${o.clients} clients, ${o.members} members in 1 pool (cooldown 0), every ${o.badTokenEvery || "no"}th request with a wrong token; log level ${o.logLevel}\n`,
    );
    console.log(table(rows));
}

main().catch((err) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exitCode = 1;
});
