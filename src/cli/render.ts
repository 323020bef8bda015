import type { ProxyCredentials, ProxyMember } from "../model";
import type { OperationResult, ProgressEvent } from "../engine";

const SYMBOL: Record<string, string> = {
    create: "+",
    update: "~",
    delete: "-",
    replace: "+-",
    "create-replacement": "+-",
    "delete-replaced": "-",
    refresh: "r",
    read: "r",
};

/**
 * Progress on stderr, resource by resource, with how long each step took. Stdout stays free for
 * results (`--json` output can be piped while progress is still visible).
 */
export function progressPrinter(out: NodeJS.WritableStream = process.stderr): (e: ProgressEvent) => void {
    const started = new Map<string, number>();
    return (e) => {
        const key = `${e.op}:${e.name}`;
        if (e.kind === "resource-start") {
            started.set(key, Date.now());
            out.write(`  ${(SYMBOL[e.op ?? ""] ?? "*").padEnd(2)} ${e.op?.padEnd(8)} ${e.name}  (${e.type})\n`);
        } else if (e.kind === "resource-done") {
            const t0 = started.get(key);
            out.write(`  ✓  ${e.op?.padEnd(8)} ${e.name}${t0 ? `  ${((Date.now() - t0) / 1000).toFixed(1)}s` : ""}\n`);
        } else if (e.kind === "resource-failed") {
            out.write(`  ✗  ${e.op?.padEnd(8)} ${e.name}\n`);
        } else if (e.kind === "diagnostic") {
            out.write(`  ${e.severity}: ${e.name ? e.name + ": " : ""}${e.message}\n`);
        }
    };
}

export function summaryLine(r: OperationResult): string {
    const parts = Object.entries(r.changes).map(([op, n]) => `${n} ${op}`);
    return `${r.kind} done in ${(r.durationMs / 1000).toFixed(1)}s: ${parts.join(", ") || "no changes"}`;
}

/** Proxies as an aligned table for people; `--json` prints the array instead. */
export function proxyTable(proxies: ProxyMember[]): string {
    if (proxies.length === 0) return "no proxies (scale a pool up with `egress scale <pool> <n>`)\n";
    return alignedTable([
        ["ID", "POOL", "PROVIDER", "ZONE", "URL", "AUTH"],
        ...proxies.map((p) => [p.id, p.pool, p.provider, p.zone, p.url, p.auth ? "yes" : "-"]),
    ]);
}

/** Pool credentials (`egress outputs --show-secrets`), one pool a line. */
export function credentialsTable(
    pools: Record<string, ProxyCredentials>,
    members?: Record<string, ProxyCredentials>,
): string {
    const rows = Object.entries(pools).map(([pool, c]) => [pool, c.username, c.password]);
    let text =
        "\n" +
        (rows.length
            ? alignedTable([["POOL", "USERNAME", "PASSWORD"], ...rows])
            : "no pool has credentials (`auth`)\n");
    // Members whose own proxy has credentials (listed static proxies): they win over their pool's.
    const own = Object.entries(members ?? {}).map(([member, c]) => [member, c.username, c.password]);
    if (own.length) text += "\n" + alignedTable([["MEMBER", "USERNAME", "PASSWORD"], ...own]);
    return text;
}

/** Rows (the first is the header) as columns padded to their widest cell, one line each. */
export function alignedTable(rows: string[][]): string {
    const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
    return (
        rows
            .map((r) =>
                r
                    .map((v, c) => v.padEnd(widths[c]))
                    .join("  ")
                    .trimEnd(),
            )
            .join("\n") + "\n"
    );
}
