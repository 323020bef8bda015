/**
 * Fleet policy on the real engine with real local proxies (one `egress serve`, short intervals), each
 * result beside a peer measured in the same run:
 * - autoscale demand step: 2 crawlers want a lease each on a pool of 1 (`targetUtilization 0.5`, so 4
 *   members are wanted): time until 4 are healthy, and the most members seen (overshoot), beside a
 *   person's `PUT replicas 1 → 4` on a plain pool;
 * - steady load: the same 2 leases held for `--steady` seconds after it settled: decisions made,
 *   as decisions per hour;
 * - scale from zero: a `min 0` pool's first lease request (503) to the first granted lease, beside a
 *   person's `PUT replicas 0 → 1` followed by a lease;
 * - one autoscale round over 200 members in 10 pools, nothing due: CPU per round and the engine
 *   operations it starts (0), beside the round interval;
 * - rotation by age: a pool of 3 with `rotateAfterSeconds` 15 (below the production floor, through
 *   EGRESS_TEST_MIN_ROTATE_SECONDS) and `maxSurge` 1 for `--rotate` seconds: members replaced per hour
 *   beside the rate if each were replaced the moment it came due, and the lowest healthy count seen
 *   every 250 ms beside the pool's count.
 *
 *   node dist/bench/fleet-policy.js [--steady 20] [--rounds 2000] [--rotate 90]
 */
import { parseArgs } from "node:util";
import { createLogger } from "../src/log/logger";
import type { PoolConfig } from "../src/model";
import { Autoscaler } from "../src/service/control/autoscale/autoscaler";
import type { Scaler } from "../src/service/control/scaler";
import { settled, sleep, waitFor } from "../test/helpers/harness";
import { startTestService, TestService, TOKENS } from "../test/helpers/service";
import { benchTable } from "./table";

const INTERVAL_MS = 500;
const AUTO = { min: 1, max: 6, targetUtilization: 0.5, scaleDownAfterSeconds: 600, cooldownSeconds: 3 };
const ZERO = { min: 0, max: 2, targetUtilization: 1, scaleDownAfterSeconds: 600, cooldownSeconds: 3 };

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            steady: { type: "string", default: "20" },
            rounds: { type: "string", default: "2000" },
            rotate: { type: "string", default: "90" },
        },
    });
    const steadyS = Number(values.steady);
    const rounds = Number(values.rounds);
    const rotateS = Number(values.rotate);
    if (!(steadyS > 0) || !(Number.isInteger(rounds) && rounds > 0) || !(rotateS > 0))
        throw new Error("--steady and --rotate (seconds) and --rounds must be positive numbers");
    const svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                { name: "auto", provider: "local", replicas: 1, maxReplicas: 6, autoscale: AUTO },
                { name: "manual", provider: "local", replicas: 1, maxReplicas: 6 },
                { name: "zero", provider: "local", replicas: 0, maxReplicas: 2, autoscale: ZERO },
                { name: "manualzero", provider: "local", replicas: 0, maxReplicas: 2 },
            ],
        },
        { autoscaleIntervalMs: INTERVAL_MS, autoscaleWindowMs: 2000 },
    );
    const rows: string[][] = [];
    try {
        await waitFor(
            "the stack converged",
            async () => (await pool(svc, "auto"))?.healthy === 1 && (await pool(svc, "manual"))?.healthy === 1,
            120_000,
        );
        rows.push(...(await demandStep(svc, steadyS)));
        rows.push(...(await fromZero(svc)));
    } finally {
        await svc.close();
    }
    rows.push(roundCost(rounds));
    rows.push(...(await rotation(rotateS)));
    console.log(`\nfleet policy: local kind, autoscale interval ${INTERVAL_MS} ms, window 2 s\n`);
    console.log(benchTable(["measure", "result", "peer or ceiling", "peer or ceiling value"], rows));
}

const pool = async (svc: TestService, name: string) =>
    (await svc.call("GET", "/v1/pools", { token: TOKENS.discover })).body.pools.find(
        (p: { name: string }) => p.name === name,
    );

async function decisions(svc: TestService, name: string): Promise<number> {
    const ops = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as {
        kind: string;
        autoscale?: Record<string, unknown>;
    }[];
    return ops.filter((o) => o.kind === "autoscale" && o.autoscale?.[name]).length;
}

/** Crawlers that each want one lease of `name`, retrying every 250 ms: resolves with the lease ids once all hold one. */
async function holdLeases(svc: TestService, name: string, n: number, timeoutMs: number): Promise<string[]> {
    const held: string[] = [];
    await waitFor(
        `${n} leases of ${name}`,
        async () => {
            const r = await svc.call("POST", "/v1/leases", {
                token: TOKENS.lease,
                body: { pool: name, ttlSeconds: 600 },
            });
            if (r.status === 201) held.push(r.body.lease.id);
            return held.length >= n;
        },
        timeoutMs,
        250,
    );
    return held;
}

async function demandStep(svc: TestService, steadyS: number): Promise<string[][]> {
    const t0 = Date.now();
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
        while (sampling) {
            most = Math.max(most, (await pool(svc, "auto")).actual);
            await sleep(100);
        }
    })();
    const held = await holdLeases(svc, "auto", 2, 180_000);
    await waitFor("4 healthy members of auto", async () => (await pool(svc, "auto")).healthy >= 4, 180_000, 100);
    const stepMs = Date.now() - t0;
    // Settled: the decisions so far, then the steady load for a while.
    await sleep(AUTO.cooldownSeconds * 1000 + 2 * INTERVAL_MS);
    const before = await decisions(svc, "auto");
    await sleep(steadyS * 1000);
    const steady = (await decisions(svc, "auto")) - before;
    sampling = false;
    await sampler;
    for (const id of held)
        await svc.call("POST", `/v1/leases/${id}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });

    const m0 = Date.now();
    const put = await svc.call("PUT", "/v1/pools/manual/replicas", { token: TOKENS.scale, body: { replicas: 4 } });
    if (put.status !== 202) throw new Error(`PUT replicas: ${put.status} ${JSON.stringify(put.body)}`);
    await settled(svc, put.body.operation.id);
    await waitFor("4 healthy members of manual", async () => (await pool(svc, "manual")).healthy >= 4, 180_000, 100);
    const manualMs = Date.now() - m0;
    return [
        [
            "autoscale: demand step 1 → 4 wanted, to 4 healthy",
            secs(stepMs),
            "a person's PUT 1 → 4, to 4 healthy",
            secs(manualMs),
        ],
        ["autoscale: most members seen (overshoot)", `${most} (${most - 4 >= 0 ? "+" : ""}${most - 4})`, "wanted", "4"],
        [
            `autoscale: decisions under a steady load (${steadyS} s)`,
            `${steady} (${Math.round((steady * 3600) / steadyS)}/h)`,
            "ceiling",
            "0",
        ],
    ];
}

async function fromZero(svc: TestService): Promise<string[][]> {
    const t0 = Date.now();
    const [auto] = await holdLeases(svc, "zero", 1, 180_000);
    const zeroMs = Date.now() - t0;
    await svc.call("POST", `/v1/leases/${auto}/release`, { token: TOKENS.lease, body: { outcome: "ok" } });
    const m0 = Date.now();
    const put = await svc.call("PUT", "/v1/pools/manualzero/replicas", { token: TOKENS.scale, body: { replicas: 1 } });
    if (put.status !== 202) throw new Error(`PUT replicas: ${put.status} ${JSON.stringify(put.body)}`);
    await holdLeases(svc, "manualzero", 1, 180_000);
    const manualMs = Date.now() - m0;
    return [
        [
            "scale from zero: first request to first lease",
            secs(zeroMs),
            "a person's PUT 0 → 1, then a lease",
            secs(manualMs),
        ],
    ];
}

const ROTATE_S = 15;

/** Rotation by age on its own service (one operation at a time: it would hold the autoscaler's back). */
async function rotation(seconds: number): Promise<string[][]> {
    process.env.EGRESS_TEST_MIN_ROTATE_SECONDS = "5"; // read by the config load and the engine's program
    const svc = await startTestService(
        {
            "egress:providers": { local: { type: "local" } },
            "egress:pools": [
                { name: "rot", provider: "local", replicas: 3, maxReplicas: 6, rotateAfterSeconds: ROTATE_S },
            ],
        },
        { rotateIntervalMs: 500 },
    );
    try {
        await waitFor("3 healthy members of rot", async () => (await pool(svc, "rot"))?.healthy === 3, 120_000);
        const t0 = Date.now();
        let lowest = Infinity;
        while (Date.now() - t0 < seconds * 1000) {
            lowest = Math.min(lowest, (await pool(svc, "rot")).healthy);
            await sleep(250);
        }
        const ops = (await svc.call("GET", "/v1/operations", { token: TOKENS.scale })).body.operations as {
            kind: string;
            rotations?: { replacedAt?: string }[];
        }[];
        const replaced = ops
            .filter((o) => o.kind === "rotate")
            .flatMap((o) => o.rotations ?? [])
            .filter((r) => r.replacedAt && Date.parse(r.replacedAt) >= t0).length;
        const perHour = Math.round((replaced * 3600) / seconds);
        return [
            [
                `rotation: members replaced per hour (3 members, every ${ROTATE_S} s, maxSurge 1, ${seconds} s)`,
                `${replaced} (${perHour}/h)`,
                "each replaced the moment it is due",
                `${Math.round((3 * 3600) / ROTATE_S)}/h`,
            ],
            ["rotation: lowest healthy count seen (every 250 ms)", String(lowest), "the pool's count", "3"],
        ];
    } finally {
        await svc.close();
    }
}

/** One autoscale round over 200 members in 10 pools at their wanted size: CPU per round, operations started. */
function roundCost(rounds: number): string[] {
    const pools: PoolConfig[] = Array.from({ length: 10 }, (_, i) => ({
        name: `p${i}`,
        provider: "local",
        replicas: 20,
        maxReplicas: 40,
        autoscale: { min: 1, max: 40, targetUtilization: 0.5, scaleDownAfterSeconds: 600, cooldownSeconds: 60 },
    })) as PoolConfig[];
    const counts = Object.fromEntries(pools.map((p) => [p.name, { healthy: 20, leased: 10, unknown: 0, actual: 20 }]));
    let started = 0;
    const scaler = {
        accepts: () => true,
        busy: () => false,
        desired: () => undefined,
        autoscale: () => {
            started++;
            throw new Error("no operation is due");
        },
    } as unknown as Scaler;
    const a = new Autoscaler({
        intervalMs: 5000,
        windowMs: 60_000,
        log: createLogger({ level: "silent" }),
        scaler,
        pools: () => pools,
        counts: () => counts,
    });
    for (let i = 0; i < 100; i++) a.runOnce(); // warm-up
    const c0 = process.cpuUsage();
    for (let i = 0; i < rounds; i++) a.runOnce();
    const c = process.cpuUsage(c0);
    const perRound = (c.user + c.system) / 1000 / rounds;
    return [
        `one autoscale round, 200 members, nothing due (${rounds} rounds)`,
        `${perRound.toFixed(3)} ms CPU, ${started} operations`,
        "the default round interval",
        "5000 ms",
    ];
}

main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
});
