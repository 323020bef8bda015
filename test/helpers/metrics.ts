import { ensureTestPackages } from "./deps";
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { PACKAGE_ROOT } from "../../src/engine/env";

/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
    name: string;
    labels: Record<string, string>;
    value: number;
}

/** The samples of a scrape (comments skipped). Label values here never hold escaped quotes. */
export function parseSamples(text: string): Sample[] {
    const out: Sample[] = [];
    for (const line of text.split("\n")) {
        if (!line || line.startsWith("#")) continue;
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
        if (!m) throw new Error(`not an exposition line: ${line}`);
        const labels: Record<string, string> = {};
        for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) labels[l[1]] = l[2];
        out.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return out;
}

/** Metric families by name and type, from the `# TYPE` lines. */
export function metricTypes(text: string): Map<string, string> {
    return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
}

/** Every sample name a scrape can carry, histogram/summary suffixes included. */
export function sampleNames(text: string): Set<string> {
    return new Set(parseSamples(text).map((s) => s.name));
}

export function find(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
    return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/**
 * Runs Debian's `promtool` (package `prometheus`, installed by scripts/install-test-deps.sh). A missing
 * promtool fails the test: a check that cannot run is not a pass.
 */
export function promtool(args: string[], input?: string): { code: number | null; out: string } {
    ensureTestPackages();
    const bin = ["/usr/bin/promtool", "/usr/local/bin/promtool"].find((p) => fs.existsSync(p));
    if (!bin) throw new Error("promtool is missing: apt-get install prometheus (scripts/install-test-deps.sh does)");
    const r = cp.spawnSync(bin, args, { input, encoding: "utf8", timeout: 60_000 });
    if (r.error) throw r.error;
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Every PromQL expression of deploy/grafana-dashboard.json. */
export function dashboardExprs(): string[] {
    const doc = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "deploy", "grafana-dashboard.json"), "utf8"));
    return (doc.panels as { targets?: { expr: string }[] }[]).flatMap((p) => (p.targets ?? []).map((t) => t.expr));
}

/** Every expression of deploy/prometheus-alerts.yml. */
export function alertExprs(): string[] {
    const doc = YAML.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "deploy", "prometheus-alerts.yml"), "utf8"));
    return (doc.groups as { rules: { expr: string }[] }[]).flatMap((g) => g.rules.map((r) => r.expr));
}

/** The egress_* metric names a PromQL expression reads. */
export function metricsIn(expr: string): string[] {
    return [...new Set(expr.match(/\begress_[a-zA-Z0-9_]+/g) ?? [])];
}

/** Sample names a scrape's families can have: counters and gauges as named, histograms with their suffixes. */
export function exportedNames(text: string): Set<string> {
    const out = new Set<string>();
    for (const [name, type] of metricTypes(text)) {
        out.add(name);
        if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) out.add(name + s);
        if (type === "summary") for (const s of ["_sum", "_count"]) out.add(name + s);
    }
    return out;
}
