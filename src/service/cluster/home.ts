import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type Redis from "ioredis";

/**
 * The id of the EGRESS_HOME a replica runs from (`<runDir>/home-id`, made once): replicas of one stack
 * must share one, since the operation journal a new leader takes over, the writer lock and the stack's
 * service socket are files there (cluster.ts `assertOneHome` refuses a replica from another home).
 */
export function homeId(runDir: string): string {
    const file = path.join(runDir, "home-id");
    try {
        return fs.readFileSync(file, "utf8").trim();
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
    try {
        // `wx`: two replicas starting at once on a new home agree on the first one written.
        fs.writeFileSync(file, randomBytes(8).toString("hex"), { flag: "wx", mode: 0o600 });
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    return fs.readFileSync(file, "utf8").trim();
}

/**
 * KEYS: the stack's home key. ARGV: home id, TTL ms. Takes a free key or renews our own, in one step, so
 * of two replicas from two homes starting in the same moment only one can pass. Returns the holder.
 */
const HOLD = `
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]
`;

/** KEYS: the stack's home key. ARGV: home id. Frees it if that home holds it. */
const FREE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0
`;

type Scripted = Redis & Record<"egressHoldHome" | "egressFreeHome", (...a: string[]) => Promise<unknown>>;

/**
 * The stack's home key in the store: which EGRESS_HOME's replicas hold the stack. Each replica takes or
 * renews it on every heartbeat (a third of the lock's TTL); it outlives the last renewal by three TTLs,
 * so replicas from another home may start only once the old ones have been silent that long, or when
 * the last of them stopped and freed it.
 */
export class StackHome {
    private readonly redis: Scripted;

    /** `home`: this replica's home id; undefined holds nothing (every call then answers undefined). */
    constructor(
        redis: Redis,
        private readonly key: string,
        readonly home: string | undefined,
        private readonly ttlMs: number,
    ) {
        this.redis = redis as Scripted;
        this.redis.defineCommand("egressHoldHome", { numberOfKeys: 1, lua: HOLD });
        this.redis.defineCommand("egressFreeHome", { numberOfKeys: 1, lua: FREE });
    }

    /** Takes or renews the key for this home; returns the home that holds it now. */
    async hold(): Promise<string | undefined> {
        if (!this.home) return undefined;
        return String(await this.redis.egressHoldHome(this.key, this.home, String(this.ttlMs)));
    }

    /** Frees the key if this home holds it (its last replica stops, or a refused start took it). */
    async free(): Promise<void> {
        if (this.home) await this.redis.egressFreeHome(this.key, this.home);
    }
}

/** What a refusal names of each running replica (a ReplicaInfo of cluster.ts, which imports this file). */
type Named = { id: string; host: string; url: string };

/**
 * Replicas of the stack already run with another scope (scope.ts): from another EGRESS_HOME when the
 * stack is one host's, or with another stack config when it is shared (Cluster.assertOneHome).
 */
export class ForeignHomeError extends Error {
    constructor(
        /** The scope that holds the stack: a home id, or `config:<hash>`. */
        readonly home: string,
        readonly others: Named[],
        /** This replica's scope, and why it is one home's (undefined when it is shared). */
        mine?: { id: string; oneHome?: string },
    ) {
        const who = others.length
            ? `: ${others.map((r) => `${r.id} on ${r.host} (${r.url})`).join(", ")}`
            : " (starting now, or stopped less than a few seconds ago)";
        const shared = (id: string) => id.startsWith("config:");
        let what: string;
        if (shared(home) && mine && shared(mine.id))
            what = `replicas of this stack already run with another stack config (${home}; this one has ${mine.id})${who}. Replicas on several hosts need the same stack file, but for the pools' replica counts, and the same backend: copy theirs (stacks/Pulumi.<stack>.yaml, its encryptionsalt too), or stop them first`;
        else if (shared(home))
            what = `replicas of this stack already run from several hosts on a shared backend (${home})${who}, but this one must run from its own EGRESS_HOME only: ${mine?.oneHome ?? "its stack is one host's"}. Start it with their stack file and backend, or stop them first`;
        else
            what = `replicas of this stack already run from another EGRESS_HOME (home ${home})${who}. ${mine?.oneHome ? `This stack's replicas share one EGRESS_HOME on one host: ${mine.oneHome}` : "Their stack is one host's (a file backend, or members that are processes of one host)"} (docs/operations.md, "Running replicas"). Start this one with their EGRESS_HOME, on their host, or stop them first`;
        super(what);
        this.name = "ForeignHomeError";
    }
}
