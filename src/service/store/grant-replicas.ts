import { Command } from "ioredis";
import type Redis from "ioredis";

/**
 * Lease grants that survive a Redis failover (issue 35). Replication is asynchronous: a grant the primary
 * acknowledged may never reach a replica, and a replica promoted after the primary dies would lease the
 * same member again (docs/decisions/0075-sentinel.md). With `replicas` > 0, every grant is followed on the same
 * connection, in the same write, by `WAIT replicas timeoutMs`: Redis answers it once that many replicas
 * have every write the connection sent before it, the grant included. Fewer in time: the grant is not
 * answered (the caller withdraws it and answers 503), so no crawler holds a lease a failover can lose.
 * Sentinel promotes the replica with the most data, which then has it.
 */
export class GrantReplicas {
    constructor(
        /** How many replicas must have a grant before it is answered; 0: answered at once. */
        readonly replicas: number,
        /** How long a grant may wait for them. */
        readonly timeoutMs: number,
    ) {}

    /**
     * Sends a grant (`send`) and, in the same turn (one socket write), its WAIT. Answers the grant's
     * reply and, when grants wait for replicas, how to learn whether enough confirmed it. `scriptLoads`
     * counts scripts sent again as EVAL (NOSCRIPT): such a grant went after the WAIT, so it gets its own.
     */
    async grant<R>(
        redis: Redis,
        send: () => Promise<R>,
        scriptLoads: () => number,
    ): Promise<{ reply: R; confirmed?: () => Promise<boolean> }> {
        const loads = scriptLoads();
        const granted = send();
        const first = this.confirm(redis);
        let reply: R;
        try {
            reply = await granted;
        } catch (e) {
            await first; // its reply heard before the grant's error goes up
            throw e;
        }
        if (!first) return { reply };
        const confirmed = scriptLoads() === loads ? first : this.confirm(redis)!;
        return { reply, confirmed: () => confirmed };
    }

    /**
     * Sends the WAIT now (after the grant's command, in the same turn: the same socket write) and answers
     * whether enough replicas confirmed. Undefined when grants wait for none.
     */
    confirm(redis: Redis): Promise<boolean> | undefined {
        if (this.replicas <= 0) return undefined;
        const wait = redis.sendCommand(new Command("wait", [String(this.replicas), String(this.timeoutMs)]));
        return (wait as Promise<unknown>).then(
            (n) => Number(n) >= this.replicas,
            () => false,
        );
    }

    /** Why a grant was withdrawn, for the 503's message. */
    reason(): string {
        return `no ${this.replicas === 1 ? "replica" : `${this.replicas} replicas`} of the lease store confirmed the grant within ${this.timeoutMs} ms (it was withdrawn: a failover could have lost it)`;
    }
}
