import type { Operation } from "../state/operations/operation";
import { EXIT } from "./context";

/**
 * What `egress scale` prints once the operation that carries its request settled, however the request
 * travelled (the service's unix socket, or the store's queue for a replica that leads): the command
 * reports only a count that was applied. A request that a later one overrode, an operation that failed
 * or was interrupted, or one that left another count, is an error (exit 1) that says which.
 */
export function reportScaleOutcome(
    op: Operation,
    want: { pool: string; n: number },
    o: {
        json?: boolean;
        via: "service" | "store";
        /** Who applied it, for people: "egress serve (pid 4242)", "the leader r-…". */
        by: string;
        /** More fields for --json (the leader, …). */
        extra?: Record<string, unknown>;
    },
): void {
    const { pool, n } = want;
    const asked = op.desired[pool];
    const applied = op.status === "succeeded" ? op.applied?.[pool] : undefined;
    const report = {
        pool,
        requested: n,
        applied: applied ?? null,
        via: o.via,
        ...o.extra,
        operation: { id: op.id, status: op.status, desired: op.desired, requests: op.requests, changes: op.changes },
    };
    let problem: string | undefined;
    if (op.status !== "succeeded") problem = `operation ${op.id} ${op.status}: ${op.error ?? "no error recorded"}`;
    else if (asked !== n)
        problem = `a later request for ${asked} replaced this one for ${n} before operation ${op.id} started (latest request wins); pool ${pool} was scaled to ${asked}, not ${n}`;
    else if (applied !== n)
        problem = `operation ${op.id} left ${applied ?? "an unknown number of"} members in pool ${pool}, not ${n}`;
    if (problem) {
        if (o.json)
            process.stdout.write(
                JSON.stringify({ ok: false, ...report, error: { type: "ScaleNotApplied", message: problem } }) + "\n",
            );
        process.stderr.write(`error: ${problem}\n`);
        process.exitCode = EXIT.failed;
    } else if (o.json) process.stdout.write(JSON.stringify({ ok: true, ...report }) + "\n");
    else
        process.stderr.write(
            `pool ${pool}: ${n} replicas applied by ${o.by} (operation ${op.id}, ${op.requests} request(s) folded in)\n`,
        );
}
