import * as fs from "node:fs";
import type { Command } from "commander";
import { checkReplicas, setPoolReplicas, stackFile } from "../config";
import { engineHome, ProgressEvent } from "../engine";
import { Announcement, findService } from "../state/cluster/announce";
import type { Operation } from "../state/operations/operation";
import { action, EXIT, projectDir, UsageError } from "./context";
import { EngineRunOptions, runEngine } from "./operations";
import { progressPrinter, proxyTable, summaryLine } from "./render";
import { ServiceClient } from "./service-client";
import { reportScaleOutcome } from "./scale-report";
import { lockWaitMs, withWriterLock } from "./writer";
import { leaderOf, queueForLeader } from "./scale-queued";
import { ReplicaLeadsError, storeOption, storeUrlOf } from "./store-lock";

type ScaleOptions = EngineRunOptions & { up: boolean; follow: boolean };

/** Engine steps that change resources: until one ran, a failed `up` changed nothing. */
const CHANGING = new Set(["create", "update", "delete", "replace", "create-replacement", "delete-replaced"]);

/**
 * `egress scale <pool> <n>`. The stack's desired state has one owner at a time: while `egress serve` runs
 * for the stack, the request goes to it (over its unix socket) and joins its queue like any API request;
 * with a store (`--store`), while a replica leads the stack, the request is queued for it there
 * (scale-queued.ts); otherwise this process takes the writer lock (and the store's), writes the stack
 * file and runs `up` itself. Either way it
 * reports only a count that was applied: a request that a later one overrode fails (exit 1) and says so.
 */
export function registerScale(program: Command): void {
    storeOption(program.command("scale <pool> <replicas>"))
        .description(
            "set a pool's desired replicas and apply them (through `egress serve` when it runs for the stack; with --store, queued for the replica that leads it)",
        )
        .option("--no-up", "only write the stack file (refused while a service owns the stack)")
        .option("-q, --quiet", "no progress output")
        .option(
            "--no-follow",
            "with --store while a replica leads: exit once the request is queued, printing its operation id (default: follow it until it settles)",
        )
        .action(
            action(async (pool: string, replicas: string, o, cmd) => {
                const opts: ScaleOptions = { ...cmd.optsWithGlobals(), ...o };
                const dir = projectDir(opts);
                // Validates first: every bad input fails here (exit 2), with nothing sent or written.
                const n = checkReplicas(dir, opts.stack, pool, replicas);
                const svc = findService(engineHome().runDir, opts.stack, (a) =>
                    process.stderr.write(
                        `removed the announcement of a service that is no longer running (pid ${a.pid})\n`,
                    ),
                );
                if (svc) {
                    if (!opts.up)
                        throw new UsageError(
                            `egress serve (pid ${svc.pid}) owns the desired state of stack ${opts.stack}; drop --no-up to send the request to it`,
                        );
                    if ((await viaService(svc, pool, n, opts)) === "applied") return;
                }
                // With a store, a replica that leads the stack (on any machine) owns its desired state.
                const url = storeUrlOf(opts);
                const leading = url && (await leaderOf(url, opts.stack));
                if (url && leading) return queueForLeader(url, leading, dir, pool, n, opts);
                try {
                    await viaFile(dir, pool, n, opts);
                } catch (e) {
                    // A replica took the lead between the look and the claim: nothing was written, so queue.
                    if (url && e instanceof ReplicaLeadsError)
                        return queueForLeader(url, e.leading, dir, pool, n, opts);
                    throw e;
                }
            }),
        );
}

/** Sends the request to the service and follows its operation. "gone" when the service stopped accepting. */
async function viaService(svc: Announcement, pool: string, n: number, opts: ScaleOptions): Promise<"applied" | "gone"> {
    const client = new ServiceClient(svc.socket);
    const deadline = Date.now() + lockWaitMs(opts);
    let accepted: Operation;
    for (;;) {
        let r: { status: number; body: any };
        try {
            r = await client.request("PUT", `/v1/pools/${encodeURIComponent(pool)}/replicas`, { replicas: n });
        } catch (e) {
            // Refused or vanished socket: the service died or is closing; without it the file path is right.
            if (!findService(engineHome().runDir, opts.stack)) return "gone";
            throw new Error(
                `egress serve (pid ${svc.pid}) owns stack ${opts.stack} but its socket ${svc.socket} does not answer: ${(e as Error).message}`,
            );
        }
        if (r.status === 202) {
            accepted = r.body.operation;
            break;
        }
        const err = r.body?.error ?? {};
        // Shutting down: it starts no more operations, so the writer lock (which it holds until its
        // running one ends) is the way. Starting: it accepts once the stack is recovered.
        if (r.status === 503 && err.details?.reason === "stopping") return "gone";
        if (r.status === 503 && Date.now() < deadline) {
            await new Promise((res) => setTimeout(res, 500));
            continue;
        }
        const message = `egress serve (pid ${svc.pid}) refused the request: ${err.message ?? `HTTP ${r.status}`}`;
        throw r.status >= 400 && r.status < 500 ? new UsageError(message) : new Error(message);
    }
    if (!opts.quiet)
        process.stderr.write(
            `pool ${pool}: ${n} requested from egress serve (pid ${svc.pid}); operation ${accepted.id}\n`,
        );
    const op = await client.follow(accepted.id, opts.quiet ? undefined : progressPrinter());
    if (!op || op.status === "queued" || op.status === "running")
        throw new Error(
            `egress serve stopped before operation ${accepted.id} settled; \`egress outputs\` shows what runs`,
        );
    reportScaleOutcome(op, { pool, n }, { json: opts.json, via: "service", by: `egress serve (pid ${svc.pid})` });
    return "applied";
}

/**
 * No service: under the writer lock, write the stack file and run `up`. If `up` changes nothing before it
 * fails (engine missing, config or preflight error, stack locked by another update...), the file gets its
 * previous bytes back, so the file never claims a count that was not applied.
 */
async function viaFile(dir: string, pool: string, n: number, opts: ScaleOptions): Promise<void> {
    await withWriterLock(opts, `egress scale ${pool} ${n}`, async () => {
        const file = stackFile(dir, opts.stack);
        const before = fs.readFileSync(file);
        const { previous } = setPoolReplicas(dir, opts.stack, pool, n);
        if (!opts.quiet) process.stderr.write(`pool ${pool}: replicas ${previous} -> ${n}\n`);
        if (!opts.up) {
            if (opts.json) process.stdout.write(JSON.stringify({ ok: true, pool, previous, replicas: n }) + "\n");
            return;
        }
        let changed = false;
        const observe = (e: ProgressEvent) =>
            void (
                (e.kind === "resource-start" || e.kind === "resource-done") &&
                CHANGING.has(e.op ?? "") &&
                (changed = true)
            );
        let ran;
        try {
            ran = await runEngine("up", { ...opts, counts: { [pool]: n } }, observe);
        } catch (e) {
            if (changed)
                process.stderr.write(
                    `the stack file keeps replicas: ${n} for pool ${pool}: the update changed resources before it failed; \`egress up\` retries\n`,
                );
            else {
                const tmp = `${file}.${process.pid}.restore`;
                fs.writeFileSync(tmp, before);
                fs.renameSync(tmp, file);
                process.stderr.write(`restored ${file} (replicas: ${previous}): the update changed nothing\n`);
            }
            throw e;
        }
        const applied = (ran.proxies ?? []).filter((p) => p.pool === pool).length;
        const report = { pool, previous, requested: n, applied, via: "file", ...ran.result, proxies: ran.proxies };
        if (applied !== n) {
            const message = `up succeeded but left ${applied} members in pool ${pool}, not ${n}`;
            if (opts.json)
                process.stdout.write(
                    JSON.stringify({ ok: false, ...report, error: { type: "ScaleNotApplied", message } }) + "\n",
                );
            process.stderr.write(`error: ${message}\n`);
            process.exitCode = EXIT.failed;
        } else if (opts.json) process.stdout.write(JSON.stringify({ ok: true, ...report }) + "\n");
        else {
            process.stderr.write(summaryLine(ran.result) + "\n");
            process.stdout.write(proxyTable(ran.proxies ?? []));
        }
    });
}
