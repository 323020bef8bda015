import type Redis from "ioredis";
import { connectOnce, partConnection } from "../../../state/cluster/connection";
import { CLUSTER_KEYS } from "../../../state/cluster/records";
import type { MemberHistory } from "./decide";
import type { HealHistoryStore } from "./history";

/**
 * The repair back-off in the store, for replicas: a hash `<prefix>heal`, member → its MemberHistory as
 * JSON, written by the leader as it changes and read by the next leader before its first round
 * (history.ts). Members that leave the fleet are removed by the leader's rounds.
 */
export class StoreHealHistory implements HealHistoryStore {
    private readonly redis: Redis;

    /** Disconnects the connection if this part opened its own (partConnection). */
    private readonly disconnectOwn: () => void;

    /** `redis`: the replica's shared connection (connection.ts partConnection); unset, its own. */
    constructor(private readonly o: { url: string; prefix: string; redis?: Redis }) {
        const c = partConnection(o); // a failed command holds repairs back until the next round
        this.redis = c.redis;
        this.disconnectOwn = c.disconnectOwn;
    }

    private get key(): string {
        return this.o.prefix + CLUSTER_KEYS.heal;
    }

    async load(): Promise<Map<string, MemberHistory>> {
        await this.connected();
        const out = new Map<string, MemberHistory>();
        for (const [id, json] of Object.entries(await this.redis.hgetall(this.key))) {
            const h = parse(json);
            if (h) out.set(id, h);
        }
        return out;
    }

    async write(changes: ReadonlyMap<string, MemberHistory | null>): Promise<void> {
        await this.connected();
        const gone = [...changes].filter(([, h]) => !h).map(([id]) => id);
        const set = [...changes].flatMap(([id, h]) => (h ? [id, JSON.stringify(h)] : []));
        const tx = this.redis.multi();
        if (set.length) tx.hset(this.key, ...set);
        if (gone.length) tx.hdel(this.key, ...gone);
        const results = await tx.exec();
        const failed = results?.find(([e]) => e)?.[0];
        if (failed) throw failed;
    }

    close(): void {
        this.disconnectOwn();
    }

    /** The connection is made on first use (nothing to do for a replica that never leads). */
    private async connected(): Promise<void> {
        await connectOnce(this.redis);
    }
}

/** A stored history, or undefined for one this release cannot read (it is then rebuilt by the next repairs). */
function parse(json: string): MemberHistory | undefined {
    try {
        const h = JSON.parse(json) as MemberHistory;
        return typeof h?.failures === "number" ? h : undefined;
    } catch {
        return undefined;
    }
}
