import { autoscaleRefusal, ConfigError, loadStackConfig } from "../config";
import { createLogger } from "../log/logger";
import { stackPrefix } from "../state/cluster/records";
import { ScaleQueue } from "../state/cluster/scale-queue";
import { EXIT, UsageError, type GlobalOptions } from "./context";
import { followInStore } from "./follow-store";
import { reportScaleOutcome } from "./scale-report";
import { progressPrinter } from "./render";
import { describeReplicaLeader, openStoreLock, replicaLeader, type ReplicaLeader } from "./store-lock";

type QueueOptions = GlobalOptions & { up: boolean; quiet?: boolean; follow?: boolean };

/** The replica leading `stack` through the store at `url`, if one does (an unreachable store fails: exit 75). */
export async function leaderOf(url: string, stack: string): Promise<ReplicaLeader | undefined> {
    const lock = await openStoreLock(url, stack);
    try {
        return await replicaLeader(lock);
    } finally {
        lock.close();
    }
}

/**
 * `egress scale` while a replica leads the stack: the request goes where a follower puts the ones it
 * takes (src/state/cluster/scale-queue.ts), after the checks a follower makes (`checkReplicas` ran already; an
 * autoscaled pool is refused as the API refuses it), and the leader applies it under the id printed
 * here. The command then follows the operation through the store's journal (follow-store.ts: no API
 * token needed) and reports it as a scale through the service does: exit 0 only once the count it asked
 * for was applied. `--no-follow` exits 0 once queued, printing where to follow it.
 */
export async function queueForLeader(
    url: string,
    leading: ReplicaLeader,
    dir: string,
    pool: string,
    n: number,
    opts: QueueOptions,
): Promise<void> {
    const who = describeReplicaLeader(leading);
    if (!opts.up)
        throw new UsageError(
            `${who} owns the desired state of stack ${opts.stack}; drop --no-up to queue the request for it`,
        );
    const cfg = loadStackConfig(dir, opts.stack);
    const found = cfg.pools.find((p) => p.name === pool)!; // checkReplicas found it
    const autoscaled = autoscaleRefusal(cfg, found, opts.stack);
    if (autoscaled) throw new ConfigError([{ path: autoscaled.path, rule: autoscaled.message }]);
    const self = `cli:${process.pid}`;
    const queue = new ScaleQueue({
        url,
        prefix: stackPrefix(opts.stack),
        self,
        log: createLogger({ level: "silent" }),
    });
    await queue.start();
    let q;
    try {
        q = await queue.enqueue(pool, n);
    } finally {
        await queue.close();
    }
    const at = leading.replica?.url;
    const follow = at
        ? `curl -H "Authorization: Bearer $TOKEN" ${at}/v1/operations/${q.id}`
        : `GET /v1/operations/${q.id} on any replica`;
    const leader = { id: leading.leader.id, host: leading.replica?.host ?? null, url: at ?? null };
    if (opts.follow === false) {
        const report = {
            pool,
            requested: n,
            via: "store",
            leader,
            operation: { id: q.id, status: "queued", desired: { [pool]: n } },
            follow,
        };
        if (opts.json) process.stdout.write(JSON.stringify({ ok: true, ...report }) + "\n");
        else if (!opts.quiet)
            process.stderr.write(
                `pool ${pool}: ${n} queued for ${who}; operation ${q.id}\nfollow it: ${follow}  (or GET /v1/operations/${q.id} on any replica)\n`,
            );
        return;
    }
    const say = (line: string) => {
        if (!opts.json && !opts.quiet) process.stderr.write(line);
    };
    say(
        `pool ${pool}: ${n} queued for ${who}; operation ${q.id} (followed through the store; Ctrl-C stops following, not the operation)\n`,
    );
    const stopped = () => {
        process.stderr.write(`\nstopped following; operation ${q.id} goes on: ${follow}\n`);
        process.exit(EXIT.interrupted);
    };
    process.once("SIGINT", stopped);
    try {
        const op = await followInStore(url, opts.stack, q.id, {
            onStatus: (o) =>
                say(`  operation ${o.id}: ${o.status}${o.id !== q.id ? ` (request ${q.id} folded in)` : ""}\n`),
            onProgress: opts.json || opts.quiet ? undefined : progressPrinter(),
        });
        reportScaleOutcome(op, { pool, n }, { json: opts.json, via: "store", by: who, extra: { leader } });
    } finally {
        process.removeListener("SIGINT", stopped);
    }
}
