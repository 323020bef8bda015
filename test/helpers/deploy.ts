/** What the deploy/ tests share: systemd-analyze (a missing tool fails, never skips) and a unit file's [Service] keys. */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import { ensureTestPackages } from "./deps";

export function systemdAnalyze(args: string[]): cp.SpawnSyncReturns<string> {
    ensureTestPackages();
    if (!fs.existsSync("/usr/bin/systemd-analyze"))
        throw new Error("systemd-analyze is missing: apt-get install systemd (scripts/install-test-deps.sh does)");
    return cp.spawnSync("/usr/bin/systemd-analyze", args, { encoding: "utf8", timeout: 60_000 });
}

/** `Key=value` lines of a unit file's [Service] section. */
export function serviceSection(unit: string): Map<string, string[]> {
    const out = new Map<string, string[]>();
    let inService = false;
    for (const raw of unit.split("\n")) {
        const line = raw.trim();
        if (line.startsWith("[")) inService = line === "[Service]";
        else if (inService && line && !line.startsWith("#")) {
            const i = line.indexOf("=");
            out.set(line.slice(0, i), [...(out.get(line.slice(0, i)) ?? []), line.slice(i + 1)]);
        }
    }
    return out;
}
