import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type Redis from "ioredis";
import type { Logger } from "pino";
import { scopeOf, type ReplicaInfo } from "../../state/cluster/records";
import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

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

/**
 * KEYS: the stack's home key. ARGV: the scope it holds now, the new one, TTL ms. Moves the stack to the new
 * scope only if the key still holds the old one. Returns the holder after.
 */
const MOVE = `
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return v end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return ARGV[2]
`;

/** KEYS: the stack's home key. ARGV: home id. Frees it if that home holds it. */
const FREE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0
`;

type Scripted = Redis &
    Record<"egressHoldHome" | "egressMoveHome" | "egressFreeHome", (...a: string[]) => Promise<unknown>>;

/** What a heartbeat found: the scope holding the stack, this replica's, and whether this one drifted. */
export interface HomeHeld {
    held: string;
    mine: string;
    /**
     * This replica's stack file changed since it joined, while replicas of another home still run the one
     * the stack holds: it stays, but starts no engine operation until every home has the change.
     */
    drifted: boolean;
}

/**
 * The stack's home key in the store: which scope's replicas hold the stack (scope.ts: one EGRESS_HOME,
 * or one stack config on a shared backend). Each replica takes or renews it on every heartbeat (a third
 * of the lock's TTL); it outlives the last renewal by three TTLs, so replicas of another scope may start
 * only once the old ones have been silent that long, or when the last of them stopped and freed it.
 *
 * The scope is read anew at every heartbeat, since an operator may edit the stack file while replicas
 * run. A replica whose scope changed moves the key along once no other live replica still runs the old
 * one (every home had the change, or this is the only home); until then it has drifted (`HomeHeld`).
 */
export class StackHome {
    private readonly redis: Scripted;
    /** The scope this replica last held the key with. */
    private joined?: string;
    /** The last heartbeat found this replica drifted (`driftReason`). */
    private drift?: HomeHeld;

    /**
     * `scope`: this replica's scope now; undefined holds nothing (every call then answers undefined).
     * `homeId`: the id of the EGRESS_HOME it runs from.
     */
    constructor(
        redis: Redis,
        private readonly key: string,
        private readonly scope: (() => string) | undefined,
        private readonly ttlMs: number,
        private readonly log?: Logger,
        private readonly homeId?: string,
    ) {
        this.redis = redis as Scripted;
        this.redis.defineCommand("egressHoldHome", { numberOfKeys: 1, lua: HOLD });
        this.redis.defineCommand("egressMoveHome", { numberOfKeys: 1, lua: MOVE });
        this.redis.defineCommand("egressFreeHome", { numberOfKeys: 1, lua: FREE });
    }

    /** This replica's scope now. */
    get home(): string | undefined {
        return this.scope?.();
    }

    /**
     * Takes or renews the key for this replica's scope; `others`: the other live replicas' scopes and homes,
     * asked only when this replica's scope changed. Replicas of this home read the same stack file, so
     * only those of other homes still on the old scope hold the move back. `mine`: the scope as the
     * caller just read it (a heartbeat reads it once: on a shared backend that loads the stack file).
     * Undefined when this replica holds nothing.
     */
    async hold(
        others?: () => Promise<{ scope?: string; home?: string }[]>,
        mine = this.home,
    ): Promise<HomeHeld | undefined> {
        if (!mine) return undefined;
        let held = String(await this.redis.egressHoldHome(this.key, mine, String(this.ttlMs)));
        const changed = held !== mine && held === this.joined;
        if (changed && others && !(await others()).some((r) => r.scope === held && r.home !== this.homeId))
            held = String(await this.redis.egressMoveHome(this.key, this.joined!, mine, String(this.ttlMs)));
        if (held === mine) this.joined = mine;
        const now = { held, mine, drifted: held !== mine && held === this.joined };
        this.noteDrift(now);
        return now;
    }

    /**
     * Why this replica must not start an engine operation although it may lead: its stack file changed
     * while replicas of another home still run the config the stack holds. Undefined when it may.
     * `[transient]`: it ends once every home has the change (the convergence is retried then).
     */
    driftReason(): string | undefined {
        const d = this.drift;
        if (!d) return undefined;
        return `this replica's stack file changed (${d.mine}), but replicas of other homes still run the stack with ${d.held}: make the same change to every home's stack file (docs/operations.md, "Replicas on several hosts"); nothing was applied [transient]`;
    }

    /** Keeps the drift (or its end) and says so once per change. */
    private noteDrift(h: HomeHeld): void {
        const now = h.drifted ? h : undefined;
        if (now?.mine === this.drift?.mine && now?.held === this.drift?.held) return;
        this.drift = now;
        if (now)
            this.log?.error(
                { mine: now.mine, held: now.held },
                "this home's stack file changed while replicas of other homes run the stack with the old one: engine operations wait until every home has the change",
            );
        else this.log?.info("this home's stack file and the stack's replicas agree again");
    }

    /**
     * Refuses to join live replicas of another scope (Cluster.assertOneHome): takes the key for this
     * replica's scope, or finds it another's; a store that does not answer is no refusal. `oneHome`: why
     * the stack is one host's, for the message. A refused start frees the key it took.
     */
    async assertAlone(replicas: () => Promise<ReplicaInfo[]>, oneHome: () => string | undefined): Promise<void> {
        const mine = this.home;
        if (!mine) return;
        const held = (await this.hold().catch(() => undefined))?.held ?? mine;
        // Records of releases before the home key carry `home` only: live ones from another home refuse too.
        const others = (await replicas()).filter((r) => scopeOf(r) && scopeOf(r) !== mine);
        if (held === mine && !others.length) return;
        // A refused start must not keep the stack for its home (the running replicas would step down).
        if (held === mine) await this.free().catch(() => undefined);
        throw new ForeignHomeError(held !== mine ? held : scopeOf(others[0])!, others, {
            id: mine,
            oneHome: oneHome(),
        });
    }

    /** Frees the key if this replica's scope holds it (its last replica stops, or a refused start took it). */
    async free(): Promise<void> {
        const mine = this.home;
        if (mine) await this.redis.egressFreeHome(this.key, mine);
    }
}

/** What a refusal names of each running replica (a ReplicaInfo of cluster.ts, which imports this file). */
type Named = { id: string; host: string; url: string };

/**
 * Replicas of the stack already run with another scope (scope.ts): from another EGRESS_HOME when the
 * stack is one host's, or with another stack config when it is shared (Cluster.assertOneHome).
 */
export class ForeignHomeError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "ForeignHomeError" };
    }
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
