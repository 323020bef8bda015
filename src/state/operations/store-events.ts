import type Redis from "ioredis";
import type { Logger } from "pino";
import { connectOnce, partConnection } from "../cluster/connection";
import { CLUSTER_KEYS } from "../cluster/records";
import { STREAM_BUFFER, type StreamEntry } from "./journal";

/** Entries kept per operation in the store, as in a process' own buffer. */
export const STORE_STREAM_MAX = STREAM_BUFFER;
/** An operation's stream goes this long after its last entry (the journal keeps its record longer than needed). */
export const STORE_STREAM_TTL_S = 24 * 3600;
/** Most entries one script call appends; a longer backlog (the store was away) goes in several calls. */
const BATCH = 200;
/** Most entries waiting for the store (the store away); the oldest go first, as the stream's MAXLEN would. */
const BACKLOG = 5 * STORE_STREAM_MAX;

/**
 * KEYS: lock, stream. ARGV: holder id, MAXLEN, TTL s, then per entry its source (`<holder>:<n>`), type and
 * JSON data. Appends the entries only while that holder holds the stack's lock (a leader cut off from Redis
 * must not add to the stream after its successor marked the operation interrupted), numbered on from the
 * stream's last id (`0-<n>`: the SSE `id:`, counting up from 1 per operation whichever leader appends).
 * A batch whose last source is already the stream's last was appended before (a retry after a reply that
 * got lost): nothing is added twice. Returns -1 when not the holder, else the last id's number.
 */
const APPEND_IF_HOLDER = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).id ~= ARGV[1] then return -1 end
local n = 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if last[1] then
  n = tonumber(string.match(last[1][1], '%-(%d+)$'))
  local f = last[1][2]
  for i = 1, #f, 2 do
    if f[i] == 's' and f[i + 1] == ARGV[#ARGV - 2] then return n end
  end
end
for i = 4, #ARGV, 3 do
  n = n + 1
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], '0-' .. n, 's', ARGV[i], 't', ARGV[i + 1], 'd', ARGV[i + 2])
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return n
`;

type Scripted = Redis & {
    egressAppendEvents(lock: string, stream: string, ...args: (string | number)[]): Promise<number>;
};

export interface StoreEventsOptions {
    /** The replica's shared connection (connection.ts partConnection); unset, this part opens its own. */
    redis?: Redis;
    url: string;
    /** The stack's key prefix (`egress:<stack>:`). */
    prefix: string;
    /** This replica's id (cluster.ts `Cluster.id`): only the lock's holder appends. */
    self: string;
    log: Logger;
    /** How soon an append that failed (the store away) is tried again. @default 1000 */
    retryMs?: number;
}

interface Pending {
    op: string;
    source: string;
    type: StreamEntry["type"];
    data: string;
}

/**
 * The event streams of a stack's operations in the store (`<prefix>events:<operation id>`, one Redis
 * stream each), so that any replica streams an operation's progress (GET /v1/operations/:id/events), and
 * a client that reconnects to another replica after a failover picks up after its `Last-Event-ID`, with
 * the next leader's `interrupted` numbered on. The leader appends in the background, in order, one script
 * call at a time; while the store is away entries wait (up to BACKLOG) and are retried every `retryMs`.
 */
export class StoreEvents {
    readonly redis: Redis;
    /** Whether this part opened its connection (and closes it), or shares the replica's. */
    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;
    private readonly pending: Pending[] = [];
    private sending?: Promise<void>;
    private retry?: NodeJS.Timeout;
    private closed = false;
    private warned = false;

    constructor(private readonly o: StoreEventsOptions) {
        const c = partConnection(o);
        this.redis = c.redis;
        this.disconnectOwn = c.disconnectOwn;
        this.redis.defineCommand("egressAppendEvents", { numberOfKeys: 2, lua: APPEND_IF_HOLDER });
    }

    /** The stream's key of one operation. */
    key(op: string): string {
        return `${this.o.prefix}${CLUSTER_KEYS.events}${op}`;
    }

    /** Queues one entry of `op`'s stream; `n` is its number in this process (for a retry's check). */
    append(op: string, n: number, type: StreamEntry["type"], data: unknown): void {
        if (this.closed) return;
        this.pending.push({ op, source: `${this.o.self}:${op}:${n}`, type, data: JSON.stringify(data) });
        if (this.pending.length > BACKLOG) this.pending.splice(0, this.pending.length - BACKLOG);
        this.kick();
    }

    /** Entries of `op` after `afterId` (all with 0), oldest first; throws while the store is away. */
    async read(op: string, afterId = 0): Promise<StreamEntry[]> {
        await connectOnce(this.redis);
        return entries(await this.redis.xrange(this.key(op), `0-${afterId + 1}`, "+", "COUNT", STORE_STREAM_MAX));
    }

    /** The newest entry of `op`, if its stream has any; throws while the store is away. */
    async last(op: string): Promise<StreamEntry | undefined> {
        await connectOnce(this.redis);
        return entries(await this.redis.xrevrange(this.key(op), "+", "-", "COUNT", 1))[0];
    }

    /** Resolves once nothing waits to be appended (tests; a stop that wants its last entries kept). */
    async flushed(timeoutMs = 2000): Promise<void> {
        const until = Date.now() + timeoutMs;
        while (this.pending.length && Date.now() < until) {
            this.kick();
            await (this.sending ?? new Promise((r) => setTimeout(r, 50)));
        }
    }

    close(): void {
        this.closed = true;
        clearTimeout(this.retry);
        this.disconnectOwn();
    }

    private kick(): void {
        if (this.sending || this.closed) return;
        clearTimeout(this.retry);
        this.sending = this.send().finally(() => (this.sending = undefined));
    }

    private async send(): Promise<void> {
        while (this.pending.length && !this.closed) {
            const op = this.pending[0].op;
            let count = 0;
            while (count < Math.min(BATCH, this.pending.length) && this.pending[count].op === op) count++;
            const batch = this.pending.slice(0, count);
            try {
                await connectOnce(this.redis);
                const args = batch.flatMap((e) => [e.source, e.type, e.data]);
                const at = await (this.redis as Scripted).egressAppendEvents(
                    this.o.prefix + CLUSTER_KEYS.leader,
                    this.key(op),
                    this.o.self,
                    STORE_STREAM_MAX,
                    STORE_STREAM_TTL_S,
                    ...args,
                );
                // Not the holder: the entries are not ours to add (the next leader records what happened).
                if (at === -1) this.pending.length = 0;
                else this.pending.splice(0, this.pending.indexOf(batch[count - 1]) + 1); // the backlog may have dropped some meanwhile
                this.warned = false;
            } catch (e) {
                if (!this.warned)
                    this.o.log.warn({ err: e }, "appending an operation's events to the store failed; retrying");
                this.warned = true;
                this.retry = setTimeout(() => this.kick(), this.o.retryMs ?? 1000);
                this.retry.unref();
                return;
            }
        }
    }
}

/** Stream entries as XRANGE answers them (`[id, [field, value, …]]`), as the SSE sends them. */
function entries(raw: [string, string[]][]): StreamEntry[] {
    return raw.map(([id, fields]) => {
        const f: Record<string, string> = {};
        for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]] = fields[i + 1];
        return { id: Number(id.split("-")[1]), type: f.t as StreamEntry["type"], data: JSON.parse(f.d) };
    });
}
