/**
 * A bad day with replicas (issue 35), as a bench, not a timed test: three `egress serve` replicas of one
 * stack on Redis behind Sentinel (a primary, 2 replicas, 3 sentinels) and a PostgreSQL state backend, all
 * real processes on loopback, under mixed load (bench/chaos-load.ts: leases, gateway requests, scale
 * operations, and rotation of a pool whose members are replaced every `--rotate` seconds). Meanwhile, in
 * turn, one fault every `--fault-every` seconds: the leader killed (SIGKILL), a follower killed, the Redis
 * primary killed (Sentinel promotes a replica; the old one comes back as a replica), PostgreSQL killed and
 * started again. A killed replica is started again after 5 s, as systemd would.
 *
 * Then the load stops, every replica runs, and the invariants are read and printed as a table: no member
 * in two leases at once, every operation settled, members = stack outputs = proxy processes, `egress gc`
 * finds nothing, no 5xx other than 503, no backend lock and no engine process of a killed replica left.
 * Every replica's log (killed ones too) is written to a temp dir, named at the end.
 * Exits 1 when one does not hold.
 *
 * Run: node dist/bench/chaos.js [--minutes 20] [--fault-every 60] [--rotate 300]
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { doubleLeases, lostGrant } from "../test/helpers/lease-load";
import { freeLoopbackPort, startTargetServer } from "../test/helpers/net";
import { startPostgres, type TestPostgres } from "../test/helpers/postgres";
import {
    cli,
    engineProcessesOf,
    procProject,
    type ProcProject,
    proxyProcesses,
    type ServeProcess,
    serve,
    untilHealthy,
} from "../test/helpers/processes";
import { settled, sleep } from "../test/helpers/harness";
import { startSentinelRedis, type TestSentinelRedis } from "../test/helpers/redis-sentinel";
import { leaderOf } from "../test/helpers/replicas";
import { chaosLoad, type ChaosLoad, type Slot } from "./chaos-load";
import { benchTable as table } from "./table";

const MAX_REPLICAS = 6;
const SURGE = 2;
const FAULTS = ["leader", "follower", "redis primary", "postgres"] as const;
type Fault = (typeof FAULTS)[number];

interface Bed {
    p: ProcProject;
    pg: TestPostgres;
    redis: TestSentinelRedis;
    slots: Slot[];
    /**
     * Every serve process started, killed ones too: none may leave an engine process behind, and their
     * logs are kept for what a run finds.
     */
    started: { slot: string; svc: ServeProcess }[];
}

const stamp = () => new Date().toISOString().slice(11, 19);
const say = (line: string) => process.stderr.write(`${stamp()} ${line}\n`);

async function startSlot(bed: Bed, s: Slot): Promise<void> {
    s.svc = await serve(bed.p, [
        "--store",
        bed.redis.url,
        "--port",
        String(s.apiPort),
        "--gateway-port",
        String(s.gatewayPort),
        "--reconcile-interval",
        "30",
        "--target-cooldown",
        "0",
    ]);
    bed.started.push({ slot: s.name, svc: s.svc });
}

const running = (s: Slot) => s.svc !== undefined && s.svc.child.exitCode === null && s.svc.child.signalCode === null;

/** Kills a replica (the leader's or a follower's slot) with SIGKILL and starts it again 5 s later. */
async function killReplica(bed: Bed, leader: boolean): Promise<string> {
    const live = bed.slots.filter(running);
    const lead = await leaderOf(
        live.map((s) => s.svc!),
        30_000,
    );
    const slot = live.find((s) => (s.svc === lead) === leader);
    if (!slot?.svc) return "no such replica up";
    slot.svc.child.kill("SIGKILL");
    await slot.svc.exited;
    await sleep(5000);
    await startSlot(bed, slot);
    return `${slot.name} killed and started again`;
}

async function injectFault(bed: Bed, fault: Fault): Promise<string> {
    if (fault === "leader" || fault === "follower") return killReplica(bed, fault === "leader");
    if (fault === "postgres") {
        await bed.pg.kill();
        await sleep(3000);
        await bed.pg.start();
        return "PostgreSQL killed, started again after 3 s";
    }
    const old = await bed.redis.primary();
    const t0 = Date.now();
    await old.kill();
    const promoted = await bed.redis.failedOver(old.port, 60_000);
    const ms = Date.now() - t0;
    await sleep(2000);
    await old.start(); // Sentinel makes it a replica of the promoted one
    return `Redis primary ${old.port} killed; sentinels named ${promoted.port} after ${ms} ms; old one back as a replica`;
}

async function setUp(o: { rotate: number }): Promise<Bed> {
    const pg = await startPostgres();
    const redis = await startSentinelRedis({ replicas: 2 });
    const p = procProject(
        "chaos",
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                {
                    name: "web",
                    provider: "local",
                    replicas: 4,
                    maxReplicas: MAX_REPLICAS + 2,
                    cooldownSeconds: 0,
                    rotateAfterSeconds: o.rotate,
                    maxSurge: SURGE,
                    drainSeconds: 0,
                },
            ],
        },
        { PULUMI_BACKEND_URL: pg.url, EGRESS_TEST_MIN_ROTATE_SECONDS: String(Math.min(o.rotate, 60)) },
    );
    const slots: Slot[] = [];
    for (const name of ["a", "b", "c"])
        slots.push({ name, apiPort: await freeLoopbackPort(), gatewayPort: await freeLoopbackPort() });
    const bed = { p, pg, redis, slots, started: [] };
    await Promise.all(slots.map((s) => startSlot(bed, s))); // at once, as a first deploy starts them
    await untilHealthy(slots[0].svc!, 4, 300_000, 500);
    return bed;
}

/** Every replica running again, every operation settled; the pool converged to what its leader wants. */
async function settle(
    bed: Bed,
    load: ChaosLoad,
): Promise<{ statuses: Map<string, number>; unsettled: string[]; kinds: Map<string, number> }> {
    for (const s of bed.slots) if (!running(s)) await startSlot(bed, s);
    const lead = await leaderOf(
        bed.slots.map((s) => s.svc!),
        60_000,
    );
    const statuses = new Map<string, number>();
    const unsettled: string[] = [];
    for (const id of load.operations) {
        const op = await settled(lead, id, 600_000).catch(() => undefined);
        if (!op) unsettled.push(id);
        else statuses.set(op.status, (statuses.get(op.status) ?? 0) + 1);
    }
    const pool = (await lead.call("GET", "/v1/pools")).body.pools[0];
    await untilHealthy(lead, pool.desired, 600_000, 1000);
    // What the leader lists (its own and those carried from the store): rotations and heals besides the scales.
    const listed = (await lead.call("GET", "/v1/operations")).body.operations as { kind: string; status: string }[];
    const kinds = new Map<string, number>();
    for (const op of listed) kinds.set(`${op.kind} ${op.status}`, (kinds.get(`${op.kind} ${op.status}`) ?? 0) + 1);
    return { statuses, unsettled, kinds };
}

/** Stops every replica with SIGTERM (SIGKILL after 60 s); the slots whose replica needed the SIGKILL. */
async function stopReplicas(bed: Bed): Promise<string[]> {
    const stuck: string[] = [];
    await Promise.all(
        bed.slots.map(async (s) => {
            if (!s.svc || !running(s)) return;
            s.svc.child.kill("SIGTERM");
            const timer = setTimeout(() => {
                stuck.push(s.name);
                s.svc?.child.kill("SIGKILL");
            }, 60_000);
            await s.svc.exited;
            clearTimeout(timer);
        }),
    );
    return stuck;
}

/**
 * The invariants, each as [name, value, goal, holds]: what the service and the load saw, read while the
 * replicas run; then, once they stopped (a rotation no longer changes the fleet), state against /proc.
 */
async function invariants(bed: Bed, load: ChaosLoad, settled: Awaited<ReturnType<typeof settle>>) {
    const lead = await leaderOf(
        bed.slots.map((s) => s.svc!),
        60_000,
    );
    const desired = (await lead.call("GET", "/v1/pools")).body.pools[0].desired as number;
    const other5xx = [...load.seen.entries()].filter(([k]) => / 5\d\d/.test(k) && !/ 503\b/.test(k));
    const doubles = doubleLeases(load.grants);
    const lost = load.grants.filter(lostGrant).length;
    const stuck = await stopReplicas(bed);
    const processes = [...proxyProcesses(bed.p).keys()].sort();
    const outputs = (JSON.parse(cli(bed.p, ["outputs", "--json"]).stdout).proxies as { id: string }[])
        .map((x) => `${bed.p.stack}-${x.id}`)
        .sort();
    const gc = cli(bed.p, ["gc", "--json"]);
    const orphans = gc.code === 0 ? (JSON.parse(gc.stdout).orphans as unknown[]).length : -1;
    const engines = bed.started.flatMap(({ svc }) => engineProcessesOf(svc.child.pid!));
    const locks = bed.pg.keys("locks");
    const ops = load.operations.length;
    // A rotation stopped between its batches keeps its surge members (up to maxSurge) until the next leader's.
    const agree =
        outputs.length >= desired &&
        outputs.length <= desired + SURGE &&
        JSON.stringify(outputs) === JSON.stringify(processes);
    return [
        ["members in two leases at once", String(doubles.length), "0", doubles.length === 0],
        ["grants lost (release 404, every attempt answered)", String(lost), "0", lost === 0],
        ["operations settled", `${ops - settled.unsettled.length} of ${ops}`, "all", settled.unsettled.length === 0],
        [
            "desired (+ surge) = outputs = processes",
            `${desired} / ${outputs.length} / ${processes.length}`,
            "equal",
            agree,
        ],
        ["egress gc orphans", String(orphans), "0", orphans === 0],
        ["5xx other than 503", JSON.stringify(Object.fromEntries(other5xx)), "none", other5xx.length === 0],
        ["replicas not stopped by SIGTERM in 60 s", JSON.stringify(stuck), "none", stuck.length === 0],
        ["backend locks left after the stop", String(locks.length), "0", locks.length === 0],
        ["engine processes left after the stop", String(engines.length), "0", engines.length === 0],
    ] as const;
}

/** Writes every replica's log (JSON lines) to a temp dir, and says where: a finding needs its minute's log. */
function keepLogs(bed: Bed): void {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-chaos-logs-"));
    bed.started.forEach(({ slot, svc }, i) =>
        fs.writeFileSync(path.join(dir, `serve-${i}-${slot}-pid${svc.child.pid}.log`), svc.logs.join("\n") + "\n"),
    );
    say(`the replicas' logs: ${dir}`);
}

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            minutes: { type: "string", default: "20" },
            "fault-every": { type: "string", default: "60" },
            rotate: { type: "string", default: "300" },
        },
    });
    const o = {
        minutes: Number(values.minutes),
        faultEvery: Number(values["fault-every"]),
        rotate: Number(values.rotate),
    };
    const origin = await startTargetServer();
    const bed = await setUp(o);
    say(`3 replicas up on PostgreSQL and Sentinel; the load starts for ${o.minutes} min`);
    const load = chaosLoad(bed.slots, {
        leaseClients: 4,
        gatewayClients: 2,
        originPort: origin.port,
        scaleEveryMs: 40_000,
        maxReplicas: MAX_REPLICAS,
    });
    const faults: string[][] = [];
    try {
        const end = Date.now() + o.minutes * 60_000;
        for (let i = 0; Date.now() + o.faultEvery * 1000 < end; i++) {
            await sleep(o.faultEvery * 1000 * (0.5 + Math.random()));
            const fault = FAULTS[i % FAULTS.length];
            const t0 = Date.now();
            const what = await injectFault(bed, fault).catch((e: Error) => `failed to inject: ${e.message}`);
            faults.push([stamp(), fault, what, `${Date.now() - t0}`]);
            say(`${fault}: ${what}`);
        }
        await sleep(Math.max(0, end - Date.now()));
        await load.stop();
        say("load stopped; waiting for every operation and the pool to settle");
        const settled = await settle(bed, load);
        const rows = await invariants(bed, load, settled);
        console.log(`\nchaos: ${o.minutes} min, a fault every ~${o.faultEvery} s, rotateAfterSeconds ${o.rotate}\n`);
        console.log(table(["time", "fault", "what happened", "ms"], faults));
        console.log();
        console.log(
            table(
                ["answers", "count"],
                [...load.seen.entries()].sort().map(([k, v]) => [k, String(v)]),
            ),
        );
        if (load.incidents.length)
            console.log(`\n${table(["time", "replica", "status", "attempts", "Proxy-Status"], load.incidents)}`);
        const kinds = JSON.stringify(Object.fromEntries([...settled.kinds].sort()));
        console.log(`\nthe operator's scales: ${JSON.stringify(Object.fromEntries(settled.statuses))}`);
        console.log(`operations the last leader lists: ${kinds}; grants ${load.grants.length}\n`);
        console.log(
            table(
                ["invariant", "value", "goal", "holds"],
                rows.map(([a, b, c, d]) => [a, b, c, d ? "yes" : "NO"]),
            ),
        );
        process.exitCode = rows.every((r) => r[3]) ? 0 : 1;
    } finally {
        await load.stop().catch(() => undefined);
        await stopReplicas(bed);
        keepLogs(bed);
        cli(bed.p, ["destroy", "--yes", "--quiet"], 600_000);
        bed.p.cleanup();
        await bed.redis.cleanup();
        await bed.pg.cleanup();
        await origin.close();
        if (fs.existsSync(bed.p.dir)) say(`left ${bed.p.dir}`);
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
