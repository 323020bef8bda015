/**
 * Redis' own account of a bench row (INFO commandstats): how many EVALSHA ran, their Redis time per
 * call, and which commands the scripts ran inside them, per EVALSHA. Used by bench/lease-store.ts
 * (--commandstats) to see what a lease+release pair costs Redis, not only what it costs the client.
 */
import Redis from "ioredis";

/** One command's line of INFO commandstats: cmdstat_<name>:calls=…,usec=…,usec_per_call=…,… */
interface CommandStat {
    calls: number;
    usec: number;
}

function parseCommandStats(info: string): Map<string, CommandStat> {
    const out = new Map<string, CommandStat>();
    for (const line of info.split(/\r?\n/)) {
        const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+),/.exec(line);
        if (m) out.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
    }
    return out;
}

export class RedisCommandStats {
    private readonly redis: Redis;
    private readonly rows: string[] = [];

    constructor(url: string) {
        this.redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
    }

    /** Zeroes Redis' counters (CONFIG RESETSTAT) before a row. */
    async reset(): Promise<void> {
        await this.redis.config("RESETSTAT");
    }

    /** Reads the counters after a row and keeps its line for the report. */
    async take(row: string): Promise<void> {
        const stats = parseCommandStats(await this.redis.info("commandstats"));
        // This client's own INFO and CONFIG are not the scripts' work.
        for (const own of ["info", "config|resetstat", "config"]) stats.delete(own);
        const evalsha = stats.get("evalsha") ?? { calls: 0, usec: 0 };
        const scripts = evalsha.calls + (stats.get("eval")?.calls ?? 0);
        stats.delete("evalsha");
        stats.delete("eval");
        const inner = [...stats.entries()].sort((a, b) => b[1].calls - a[1].calls);
        const innerCalls = inner.reduce((n, [, s]) => n + s.calls, 0);
        const innerUsec = inner.reduce((n, [, s]) => n + s.usec, 0);
        const per = (n: number) => (scripts ? n / scripts : 0).toFixed(2);
        this.rows.push(
            `${row}: EVALSHA ${evalsha.calls} calls, ${evalsha.calls ? (evalsha.usec / evalsha.calls).toFixed(2) : "-"} µs/call; ` +
                `inside, per script: ${per(innerCalls)} commands, ${per(innerUsec)} µs (` +
                inner.map(([name, s]) => `${per(s.calls)} ${name.toUpperCase()}`).join(", ") +
                ")",
        );
    }

    report(): string {
        return `Redis INFO commandstats per row (warm-up included):\n${this.rows.join("\n")}`;
    }

    async close(): Promise<void> {
        await this.redis.quit().catch(() => undefined);
        this.redis.disconnect();
    }
}
