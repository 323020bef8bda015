/**
 * What bench/gateway.ts prints from its rows: the table, each proxied row beside the direct row of its
 * traffic and client count (through one member, same run), and issue 34's goals marked met or not.
 */
import { benchTable } from "../table";
import type { Row, Traffic } from "./load";

export const ORIGIN = "origin directly (ceiling)";
export const MEMBER = "through one member";
export const GATEWAY = "through the gateway";
export const SQUID_ROW = "through squid (round-robin parents)";
export const RELAY = "through a bare TCP relay (floor)";
/** gateway-replicas.ts' one-process Redis row (its ONE_REPLICA), named here so the report needs no store code. */
export const REDIS_ROW = "gateway, redis store, 1 process";

/** Its peer: the row through one member with the same traffic and clients. */
function directOf(rows: readonly Row[], r: Row): Row | undefined {
    return rows.find((d) => d.path === MEMBER && d.traffic === r.traffic && d.concurrency === r.concurrency);
}

/** `r` against `direct`: its rate as % of direct's, and the ms it adds at p50. */
export function versus(r: Row, direct: Row): { pct: number; addedP50: number } {
    return { pct: direct.rate > 0 ? (100 * r.rate) / direct.rate : NaN, addedP50: r.p50 - direct.p50 };
}

const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "-");

export function rowsTable(rows: readonly Row[]): string {
    return benchTable(
        [
            "path",
            "traffic",
            "clients",
            "count",
            "per s",
            "p50 ms",
            "p99 ms",
            "503",
            "failed",
            "% direct",
            "+p50 ms",
            "proxy µs/req",
            "members µs/req",
            "proxy switches/req",
        ],
        rows.map((r) => {
            const d = r.path === MEMBER || r.path === ORIGIN ? undefined : directOf(rows, r);
            const v = d && versus(r, d);
            return [
                r.path,
                r.traffic,
                String(r.concurrency),
                String(r.count),
                f(r.rate, 0),
                f(r.p50, 3),
                f(r.p99, 3),
                String(r.unavailable),
                String(r.failed),
                v ? `${f(v.pct, 0)}%` : "",
                v ? f(v.addedP50, 3) : "",
                r.cpuProxy === undefined ? "" : f(r.cpuProxy, 0),
                r.cpuMembers === undefined ? "" : f(r.cpuMembers, 0),
                r.switchesProxy === undefined ? "" : f(r.switchesProxy, 1),
            ];
        }),
    );
}

export interface Goal {
    goal: string;
    /** undefined: the run did not measure it (that client count was not asked for). */
    met: boolean | undefined;
    measured: string;
}

/** Issue 34's goals for the gateway, from one run's rows. */
export function goals(rows: readonly Row[], traffics: readonly Traffic[]): Goal[] {
    const at = (p: string, t: Traffic, c: number) =>
        rows.find((r) => r.path === p && r.traffic === t && r.concurrency === c);
    const vsDirect = (c: number) => {
        const gw = at(GATEWAY, "HTTP", c);
        const d = at(MEMBER, "HTTP", c);
        return gw && d ? versus(gw, d) : undefined;
    };
    const one = vsDirect(1);
    const four = vsDirect(4);
    const out: Goal[] = [
        {
            goal: "HTTP, 1 client: the gateway adds ≤ 0.15 ms at p50",
            met: one && one.addedP50 <= 0.15,
            measured: one ? `+${f(one.addedP50, 3)} ms` : "not measured",
        },
        {
            goal: "HTTP, 1 client: the gateway keeps ≥ 80% of direct",
            met: one && one.pct >= 80,
            measured: one ? `${f(one.pct, 0)}%` : "not measured",
        },
        {
            goal: "HTTP, 4 clients: the gateway keeps ≥ 60% of direct",
            met: four && four.pct >= 60,
            measured: four ? `${f(four.pct, 0)}%` : "not measured",
        },
    ];
    for (const c of [...new Set(rows.map((r) => r.concurrency))]) {
        const gw = at(GATEWAY, "HTTP", c);
        const redis = rows.find((r) => r.path === REDIS_ROW && r.concurrency === c);
        if (redis && gw && (c === 1 || c === 16))
            out.push({
                goal: `HTTP, ${c} client${c > 1 ? "s" : ""}: the gateway on the Redis store keeps ≥ 70% of the memory store's`,
                met: redis.rate >= 0.7 * gw.rate,
                measured: `${f((100 * redis.rate) / gw.rate, 0)}% (${f(redis.rate, 0)} vs ${f(gw.rate, 0)}/s)`,
            });
        out.push({
            goal: `HTTP, ${c} client${c > 1 ? "s" : ""}: the gateway's CPU ≤ 150 µs per request`,
            met: gw?.cpuProxy === undefined ? undefined : gw.cpuProxy <= 150,
            measured: gw?.cpuProxy === undefined ? "not measured" : `${f(gw.cpuProxy, 0)} µs`,
        });
    }
    const levels = [...new Set(rows.map((r) => r.concurrency))];
    for (const t of traffics)
        for (const c of levels) {
            const gw = at(GATEWAY, t, c);
            const sq = at(SQUID_ROW, t, c);
            out.push({
                goal: `${t}, ${c} client${c > 1 ? "s" : ""}: the gateway beats squid`,
                met: gw && sq && gw.rate > sq.rate,
                measured: gw && sq ? `${f(gw.rate, 0)} vs ${f(sq.rate, 0)}/s` : "not measured",
            });
        }
    return out;
}

export function goalsTable(list: readonly Goal[]): string {
    return benchTable(
        ["goal (issue 34)", "measured", "status"],
        list.map((g) => [g.goal, g.measured, g.met === undefined ? "not measured" : g.met ? "met" : "not met"]),
    );
}
