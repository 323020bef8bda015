/**
 * What redaction at any depth costs per log line: createLogger (redactDeep in formatters, child and
 * serializers) against pino configured as before it (fast-redact `redact.paths`, which only match
 * the depths listed), on a null destination, in process. Prints lines/s and µs per line.
 *
 *   node dist/bench/logger.js [--lines 200000]
 */
import { parseArgs } from "node:util";
import pino from "pino";
import { createLogger } from "../src/log/logger";
import { benchTable } from "./table";

/** The root logger's options up to commit 0855eec. */
const PATHS_BEFORE = [
    "req.headers.authorization",
    "req.headers.cookie",
    "*.token",
    "*.password",
    "*.privateKey",
    "*.cloudInit",
    "*.userData",
    "*.secret",
    "*.*.privateKey",
];

const nowhere = { write: (_s: string) => undefined };

const shapes: [string, (log: pino.Logger) => void][] = [
    ["message only", (log) => log.info("operation started")],
    [
        "flat object",
        (log) =>
            log.info(
                { proxy: "web-3", from: "healthy", to: "unhealthy", reason: "timeout after 5000 ms" },
                "proxy health changed",
            ),
    ],
    [
        "request line (serialized req/res)",
        (log) =>
            log.info(
                {
                    req: {
                        id: 1,
                        method: "POST",
                        url: "/v1/leases",
                        headers: {
                            host: "127.0.0.1:8080",
                            authorization: "Bearer x",
                            "content-type": "application/json",
                            "content-length": "2",
                        },
                        remoteAddress: "127.0.0.1",
                        remotePort: 40000,
                    },
                    res: { statusCode: 401, headers: { "content-type": "application/json; charset=utf-8" } },
                    responseTime: 0,
                    error: "unauthenticated",
                },
                "request completed",
            ),
    ],
    [
        "nested config, 6 levels, one secret",
        (log) =>
            log.info(
                {
                    provider: {
                        name: "gcp",
                        entry: {
                            type: "gcp",
                            project: "p",
                            zones: ["a", "b"],
                            instance: {
                                machineType: "e2-small",
                                boot: { image: "debian", disk: { sizeGb: 10, key: { privateKey: "-----BEGIN" } } },
                            },
                        },
                    },
                },
                "provider loaded",
            ),
    ],
];

function rate(log: pino.Logger, write: (log: pino.Logger) => void, lines: number): number {
    for (let i = 0; i < Math.min(20_000, lines); i++) write(log); // warm-up
    const t0 = performance.now();
    for (let i = 0; i < lines; i++) write(log);
    return lines / ((performance.now() - t0) / 1000);
}

function main(): void {
    const { values } = parseArgs({ options: { lines: { type: "string", default: "200000" } } });
    const lines = Number(values.lines);
    if (!Number.isInteger(lines) || lines <= 0)
        throw new Error(`--lines must be a positive whole number, got ${values.lines}`);
    const before = pino(
        { level: "info", redact: { paths: PATHS_BEFORE, censor: "[redacted]" }, base: { service: "egress" } },
        nowhere,
    );
    const after = createLogger({ level: "info", destination: nowhere });
    const head = ["line", "pino redact paths: lines/s", "µs/line", "redactDeep: lines/s", "µs/line"];
    const rows = shapes.map(([name, write]) => {
        const b = rate(before, write, lines);
        const a = rate(after, write, lines);
        return [
            name,
            Math.round(b).toLocaleString("en-US"),
            (1e6 / b).toFixed(2),
            Math.round(a).toLocaleString("en-US"),
            (1e6 / a).toFixed(2),
        ];
    });
    console.log(`\nnode ${process.version}; ${lines.toLocaleString("en-US")} lines per cell, null destination\n`);
    console.log(benchTable(head, rows));
}

main();
