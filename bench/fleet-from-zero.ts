/**
 * A fleet from zero and back (issue 33): one `up` that creates N local members, then one `destroy`, for a
 * small and a large N side by side, with members sharing processes (`membersPerProcess`). Reports wall
 * times, time per member, the checkpoint, the proxy processes' memory (RSS and PSS, summed, after the up),
 * and the engine's peak RSS (its processes sampled every 500 ms during the up). Real engine, file backend,
 * throwaway projects.
 * Run: node dist/bench/fleet-from-zero.js [sizes=10,1000] [membersPerProcess=50]
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { checkpointDir } from "../src/engine/checkpoint";
import { tempProject } from "../test/helpers/project";
import { runningProxies } from "../components/local/process";
import { benchTable } from "./table";

interface Row {
    members: number;
    upS: number;
    destroyS: number;
    checkpointKB: number;
    processes: number;
    rssMB: number;
    pssMB: number;
    enginePeakMB: number;
}

/** kB of `field` in /proc/<pid>/smaps_rollup (RSS, PSS), 0 when the process is gone. */
function memKB(pid: number, field: "Rss" | "Pss"): number {
    try {
        const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
        return m ? Number(m[1]) : 0;
    } catch {
        return 0;
    }
}

/** RSS (MB) of the engine's processes now: pulumi and its language and provider plugins. */
function engineRssMB(): number {
    let kb = 0;
    for (const e of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(e)) continue;
        try {
            const cmd = fs.readFileSync(`/proc/${e}/cmdline`, "utf8");
            if (/pulumi|dynamic-provider|automation/.test(cmd) && !cmd.includes("fleet-from-zero"))
                kb += memKB(Number(e), "Rss");
        } catch {
            /* gone */
        }
    }
    return kb / 1024;
}

async function fleet(members: number, perProcess: number): Promise<Row> {
    const stack = `ffz${members}`;
    const p = tempProject(stack, {
        "egress:providers": { local: { type: "local", membersPerProcess: perProcess } },
        "egress:pools": [{ name: "web", provider: "local", replicas: members, maxReplicas: members }],
    });
    try {
        let peak = 0;
        const sampler = setInterval(() => (peak = Math.max(peak, engineRssMB())), 500);
        const t0 = Date.now();
        await p.driver.up({ refresh: false });
        const upS = (Date.now() - t0) / 1000;
        clearInterval(sampler);
        const file = path.join(checkpointDir(path.join(p.dir, "backend")), `${stack}.json`);
        // The project's run dir (test/helpers/project.ts), as the provider's stateDir (components/local/local-proxy.ts).
        const pids = new Set([...runningProxies(path.join(p.dir, "run", "local", stack)).values()].flat());
        const sum = (f: "Rss" | "Pss") => [...pids].reduce((n, pid) => n + memKB(pid, f), 0) / 1024;
        const row = {
            members,
            upS,
            checkpointKB: fs.statSync(file).size / 1024,
            processes: pids.size,
            rssMB: sum("Rss"),
            pssMB: sum("Pss"),
            enginePeakMB: peak,
            destroyS: 0,
        };
        const t1 = Date.now();
        p.driver.setPoolCounts({});
        await p.driver.destroy();
        row.destroyS = (Date.now() - t1) / 1000;
        return row;
    } finally {
        p.cleanup();
    }
}

async function main(): Promise<void> {
    const sizes = (process.argv[2] ?? "10,1000").split(",").map(Number);
    const perProcess = Number(process.argv[3] ?? 50);
    const rows: Row[] = [];
    for (const n of sizes) {
        rows.push(await fleet(n, perProcess));
        console.error(`# ${JSON.stringify(rows.at(-1))}`);
    }
    console.log(
        benchTable(
            [
                "members",
                "up s",
                "s/member",
                "destroy s",
                "checkpoint KB",
                "processes",
                "RSS MB",
                "PSS MB",
                "MB/member (PSS)",
                "engine peak MB",
            ],
            rows.map((r) => [
                String(r.members),
                r.upS.toFixed(1),
                (r.upS / r.members).toFixed(3),
                r.destroyS.toFixed(1),
                r.checkpointKB.toFixed(0),
                String(r.processes),
                r.rssMB.toFixed(0),
                r.pssMB.toFixed(0),
                (r.pssMB / r.members).toFixed(2),
                r.enginePeakMB.toFixed(0),
            ]),
        ),
    );
}

main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
});
