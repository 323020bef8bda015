/**
 * A SIGKILL of `egress serve` in the middle of a rolling change (src/fleet-ops/rolling/run.ts), at two moments: while
 * the first batch is replaced behind the surge member (the stack file holds N + surge then), and during
 * the final plain `up` that removes the surge member (the file holds N again). The next start reports the
 * cut operation as interrupted, writes the pool's own count back (rotate/run.ts `countsToRestore`, which
 * knows the `rolling` record) and converges: exactly 4 members, all on the new ports, the stack file at 4,
 * and nothing leaked (processes = state = outputs, no engine of the dead service, no lock, `gc` clean).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import {
    cli,
    engineProcessesOf,
    killServices,
    procProject,
    ProcProject,
    proxyProcesses,
    serve,
    ServeProcess,
} from "../helpers/processes";
import { assertNothingLeaked } from "../helpers/restart-checks";
import { onRange, rollingConfig, rollingPortRange, watchRolling } from "../helpers/rolling";
import { settled, waitFor } from "../helpers/harness";

let p: ProcProject;
let base: number;
before(async () => {
    base = await rollingPortRange();
    p = procProject("rlr", rollingConfig(base));
});
after(async () => {
    killServices();
    cli(p, ["destroy", "--yes", "--quiet"]);
    assert.deepEqual([...proxyProcesses(p).keys()], [], "destroy leaves no proxy running");
    p.cleanup();
});

const operation = async (svc: ServeProcess, id: string) =>
    (await svc.call("GET", `/v1/operations/${id}`)).body.operation;
const pool = async (svc: ServeProcess) =>
    ((await svc.call("GET", "/v1/pools")).body.pools as any[]).find((x) => x.name === "web");
const urls = async (svc: ServeProcess) =>
    new Map(((await svc.call("GET", "/v1/proxies")).body.proxies as any[]).map((x) => [x.id as string, x.url]));
/** The engine of `pid` has started its dynamic-provider plugin: an update is under way. */
const engineRunning = (pid: number) =>
    engineProcessesOf(pid).some((e) => e.command.includes("pulumi-resource-pulumi-nodejs"));

/** The start's convergence settled; it is the latest `up`. */
async function converged(svc: ServeProcess): Promise<any> {
    const ops = (await svc.call("GET", "/v1/operations")).body.operations as any[];
    const up = ops.filter((o) => o.kind === "up").sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
    assert.ok(up, "the start converges");
    return settled(svc, up.id, 300_000);
}

/** Moves the pool to the ports at `to` and asks for its count, which rolls the change; returns the operation id. */
async function startRoll(svc: ServeProcess, to: number): Promise<string> {
    p.writeConfig(rollingConfig(to));
    const r = await svc.call("PUT", "/v1/pools/web/replicas", { body: { replicas: 4 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.operation.id;
}

/**
 * SIGKILLs `svc` and restarts it; asserts what the restart leaves once converged. `rerolls`: members were
 * left on the old ports, so the start's convergence rolls them behind a surge member again.
 */
async function killAndRestart(
    svc: ServeProcess,
    cut: string,
    to: number,
    label: string,
    rerolls: boolean,
): Promise<ServeProcess> {
    const dead = svc.child.pid!;
    svc.child.kill("SIGKILL");
    await svc.exited;
    const t0 = Date.now();
    const next = await serve(p);
    assert.equal((await operation(next, cut)).status, "interrupted", `${label}: the cut roll is reported, not lost`);
    const up = await converged(next);
    assert.equal(up.status, "succeeded", up.error);
    process.stdout.write(`# ${label}: the convergence's rolling record: ${JSON.stringify(up.rolling)}\n`);
    if (rerolls) assert.deepEqual(up.rolling?.surge, ["web-4"], `${label}: the rest rolls behind a surge member`);
    else assert.equal(up.rolling, undefined, `${label}: nothing was left to roll`);
    await waitFor(
        `${label}: 4 members, all healthy, on the new ports`,
        async () => {
            const v = await pool(next);
            return v.desired === 4 && v.actual === 4 && v.healthy === 4 && onRange(await urls(next), to);
        },
        120_000,
        200,
    );
    process.stdout.write(`# ${label}: restart → 4 members on the new ports: ${Date.now() - t0} ms\n`);
    assert.equal(p.replicas("web"), 4, `${label}: the stack file holds the pool's own count, not the surge's`);
    assert.deepEqual(await assertNothingLeaked(p, next, dead, `${label}: `), ["web-0", "web-1", "web-2", "web-3"]);
    return next;
}

test(
    "kill -9 mid-roll (first batch behind the surge; then in the final up), restart: 4 members on the new ports, count 4, nothing leaked",
    { timeout: 900_000 },
    async () => {
        let svc = await serve(p);
        assert.equal((await converged(svc)).status, "succeeded");
        await waitFor("4 healthy on the first ports", async () => onRange(await urls(svc), base), 60_000, 200);

        // 1. The surge member stands in and web-0's replacement is under way.
        const second = await rollingPortRange([base]);
        let id = await startRoll(svc, second);
        const { op } = await watchRolling(
            () => operation(svc, id),
            (o) => o.rolling?.batch === 1 && o.reasons?.["web-0"] !== undefined,
        );
        assert.equal(op.status, "running", op.error);
        assert.deepEqual(op.rolling.surge, ["web-4"]);
        await waitFor("the engine replacing web-0", () => engineRunning(svc.child.pid!), 60_000, 5);
        assert.equal(p.replicas("web"), 5, "the surge is in the stack file while the roll runs");
        svc = await killAndRestart(svc, id, second, "cut in batch 1", true);

        // 2. Every member replaced; the final plain `up` (which removes the surge member) is under way.
        const third = await rollingPortRange([base, second]);
        id = await startRoll(svc, third);
        await watchRolling(
            () => operation(svc, id),
            (o) => o.rolling?.replaced.length === 4,
        );
        await waitFor(
            "the final up under way",
            () => svc.logs.some((l) => l.includes("rolling done")) && engineRunning(svc.child.pid!),
            60_000,
            5,
        );
        assert.equal((await operation(svc, id)).status, "running");
        assert.equal(p.replicas("web"), 4, "the count is written back before the final up");
        svc = await killAndRestart(svc, id, third, "cut in the final up", false);

        svc.child.kill("SIGTERM");
        await svc.exited;
    },
);
