/**
 * Sticky sessions: how often a session gets its member back, and what a session costs per acquire,
 * side by side with plain acquires measured in the same run.
 *
 *   node dist/bench/sessions.js [--members 100] [--sessions 1000] [--held 0,10,50,90] [--seconds 2] [--churn 0]
 *
 * One in-process LeaseManager per row. Each step acquires a lease while `held` others are live (it
 * releases the oldest first), alternating a session acquire (one of `sessions` keys, picked by a seeded
 * RNG) and a plain one, so both kinds see the same fleet state. `held` is how many members crawlers hold at once:
 * a session's member leased by someone else makes the session move (docs/decisions/0038-leases.md), so the hit
 * ratio falls as `held` approaches `members`. `--churn N` turns one member unhealthy every N steps (and
 * the previous one healthy again), which moves its sessions too.
 * A hit is a session acquire that got the member the session was bound to (`rebound: false` on a known
 * session); a session's first acquire is counted as `new`, not as a hit.
 */
import { parseArgs } from "node:util";
import { LeaseManager } from "../src/service/leases";
import { benchTable } from "./table";

export interface SessionBenchResult {
    members: number;
    sessions: number;
    held: number;
    churn: number;
    sessionAcquires: number;
    hits: number;
    rebound: number;
    fresh: number;
    /** Session acquires answered `none-available` (counted, not timed). */
    refused: number;
    hitRatio: number;
    session: { p50Us: number; p99Us: number };
    plain: { p50Us: number; p99Us: number; acquires: number };
}

function percentiles(samples: number[]): { p50Us: number; p99Us: number } {
    const a = Float64Array.from(samples).sort();
    const at = (q: number) => (a.length ? a[Math.min(a.length - 1, Math.floor(q * (a.length - 1)))] * 1000 : NaN);
    return { p50Us: at(0.5), p99Us: at(0.99) };
}

export function runSessionBench(
    opts: { members?: number; sessions?: number; held?: number; seconds?: number; churn?: number } = {},
): SessionBenchResult {
    const members = opts.members ?? 100;
    const sessions = opts.sessions ?? 1000;
    const held = Math.min(opts.held ?? 10, members - 1);
    const seconds = opts.seconds ?? 2;
    const churn = opts.churn ?? 0;
    let n = 0;
    const m = new LeaseManager({ initiallyEligible: true, newLeaseId: () => `L${++n}` });
    const ids = Array.from({ length: members }, (_, i) => `bench-${i}`);
    m.setMembers(
        ids.map((id) => ({ id, pool: "bench" })),
        { bench: { cooldownSeconds: 0 } },
    );
    let seed = 11;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
    const keys = Array.from({ length: sessions }, (_, i) => `s${i}`);
    const seen = new Uint8Array(sessions);
    const outstanding: string[] = [];
    let step = 0;
    let down = -1;
    const counts = { sessionAcquires: 0, hits: 0, rebound: 0, fresh: 0, refused: 0 };
    const sessionSamples: number[] = [];
    const plainSamples: number[] = [];
    const once = (measure: boolean) => {
        while (outstanding.length > held) m.release(outstanding.shift()!, "ok");
        if (churn > 0 && step % churn === 0) {
            if (down >= 0) m.setEligible(ids[down], true);
            down = Math.floor(rand() * members);
            m.setEligible(ids[down], false);
        }
        const withSession = (step++ & 1) === 0;
        const k = withSession ? Math.floor(rand() * sessions) : -1;
        const t0 = performance.now();
        const r = m.acquire(withSession ? { pool: "bench", session: keys[k] } : { pool: "bench" });
        const dt = performance.now() - t0;
        if (!r.ok) {
            if (measure && withSession) counts.refused++;
            return;
        }
        outstanding.push(r.lease.id);
        if (k >= 0 && !measure) seen[k] = 1;
        if (!measure) return;
        if (!withSession) return void plainSamples.push(dt);
        sessionSamples.push(dt);
        counts.sessionAcquires++;
        if (!seen[k]) counts.fresh++;
        else if (r.rebound) counts.rebound++;
        else counts.hits++;
        seen[k] = 1;
    };
    // Warm-up: the JIT settles and the sessions get bound (`seen` marks them), so `new` counts only
    // sessions the warm-up did not reach.
    for (const end = performance.now() + 300; performance.now() < end;) once(false);
    for (const end = performance.now() + seconds * 1000; performance.now() < end;) once(true);
    const known = counts.hits + counts.rebound;
    return {
        members,
        sessions,
        held,
        churn,
        ...counts,
        hitRatio: known ? counts.hits / known : NaN,
        session: percentiles(sessionSamples),
        plain: { ...percentiles(plainSamples), acquires: plainSamples.length },
    };
}

export function formatSessionTable(rows: SessionBenchResult[]): string {
    const head = [
        "members / sessions / held",
        "churn",
        "session acq",
        "hit ratio",
        "hits",
        "rebound",
        "new",
        "503s",
        "session p50 µs",
        "session p99 µs",
        "plain acq",
        "plain p50 µs",
        "plain p99 µs",
    ];
    const us = (v: number) => v.toFixed(2);
    const body = rows.map((r) => [
        `${r.members} / ${r.sessions} / ${r.held}`,
        r.churn ? `1 per ${r.churn}` : "-",
        String(r.sessionAcquires),
        `${(r.hitRatio * 100).toFixed(1)}%`,
        String(r.hits),
        String(r.rebound),
        String(r.fresh),
        String(r.refused),
        us(r.session.p50Us),
        us(r.session.p99Us),
        String(r.plain.acquires),
        us(r.plain.p50Us),
        us(r.plain.p99Us),
    ]);
    return benchTable(head, body);
}

function main(): void {
    const { values } = parseArgs({
        options: {
            members: { type: "string" },
            sessions: { type: "string" },
            held: { type: "string" },
            seconds: { type: "string" },
            churn: { type: "string" },
        },
    });
    const num = (v: string | undefined, name: string, dflt: number, min = 1) => {
        if (v === undefined) return dflt;
        const x = Number(v);
        if (!Number.isInteger(x) || x < min) throw new Error(`--${name} must be a whole number ≥ ${min}, got ${v}`);
        return x;
    };
    const members = num(values.members, "members", 100, 2);
    const sessions = num(values.sessions, "sessions", 1000);
    const seconds = num(values.seconds, "seconds", 2);
    const churn = num(values.churn, "churn", 0, 0);
    const helds = (values.held ?? "0,10,50,90").split(",").map((h) => num(h, "held", 0, 0));
    const rows = helds.map((held) => runSessionBench({ members, sessions, held, seconds, churn }));
    console.log(
        `node ${process.version}, ${require("node:os").cpus().length} CPUs; hit ratio = hits / (hits + rebound)\n`,
    );
    console.log(formatSessionTable(rows));
}

if (require.main === module) {
    try {
        main();
    } catch (err) {
        console.error(err instanceof Error ? err.message : err);
        process.exitCode = 1;
    }
}
