import { createHash } from "node:crypto";
import { Command } from "ioredis";
import type Redis from "ioredis";

/** Replies as ioredis' defineCommand gives them: bulk strings as UTF-8 strings. */
const OPTIONS = { replyEncoding: "utf8" as const };

/**
 * A command whose timeout counts only once this process could have read the reply. A busy turn (a burst
 * of requests) can outlast the timeout while Redis' answers wait unread on the socket, and Node runs
 * expired timers before it reads sockets: ioredis' own timer then fails commands Redis has answered
 * (a fresh-clone CI saw 174 of 1,000 burst leases answered 503 "Command timed out"). Here the expired
 * timer leaves its verdict to the loop's check phase (setImmediate), after the poll phase read what
 * arrived. A Redis that does not answer still fails the command, one turn after `commandTimeout`.
 */
class PatientCommand extends Command {
    override setTimeout(ms: number): void {
        // ioredis' field, so that its _clearTimers (on every reply and rejection) clears this timer too.
        const self = this as unknown as { _commandTimeoutTimer?: NodeJS.Timeout };
        if (self._commandTimeoutTimer) return;
        self._commandTimeoutTimer = setTimeout(
            () =>
                setImmediate(() => {
                    if (!this.isResolved) this.reject(new Error("Command timed out"));
                }),
            ms,
        );
    }
}

/**
 * One of the store's Lua scripts (scripts.ts), sent as EVALSHA with one key, and as EVAL when Redis
 * answers NOSCRIPT (it restarted or its scripts were flushed; the next EVALSHA then finds the script).
 *
 * Instead of ioredis' defineCommand, because every call of a defined command costs the service more
 * than the lease work around it: argument copies and a flattening pass, a promise chained for the
 * NOSCRIPT retry and a wrapped reject per call, and a first call per connection sent as EVAL with the
 * whole script. Here a call is one Command over arguments that are strings already, and the retry
 * happens only on the error path (docs/bench.md). Timeouts, the offline refusal and errors are
 * ioredis' own, as before (the timeout read once the loop has read its sockets: PatientCommand): the
 * command goes through `sendCommand` like any other.
 */
export class StoreScript {
    private readonly sha: string;

    constructor(private readonly lua: string) {
        this.sha = createHash("sha1").update(lua).digest("hex");
    }

    /** EVALSHA with KEYS[1] = `key` and `args` as ARGV. */
    send(redis: Redis, key: string, args: string[]): Promise<unknown> {
        return redis.sendCommand(
            new PatientCommand("evalsha", [this.sha, "1", key, ...args], OPTIONS),
        ) as Promise<unknown>;
    }

    /** The same as EVAL, which also caches the script in Redis: after `send` failed with NOSCRIPT. */
    load(redis: Redis, key: string, args: string[]): Promise<unknown> {
        return redis.sendCommand(
            new PatientCommand("eval", [this.lua, "1", key, ...args], OPTIONS),
        ) as Promise<unknown>;
    }
}

/** Whether `e` is Redis' answer to an EVALSHA of a script it does not have. */
export function isNoScript(e: unknown): boolean {
    return e instanceof Error && e.message.startsWith("NOSCRIPT");
}
