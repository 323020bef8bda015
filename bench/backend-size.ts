/**
 * How big a stack's Pulumi state gets, per member and per update, on the file and PostgreSQL backends:
 * Pulumi's defaults (backups on, plain JSON, history kept forever) against egress's (backups off, gzip
 * on PostgreSQL, history pruned past EGRESS_STATE_HISTORY updates; here 3, so the bound shows in a
 * short run). Each row: one `up` of N local members, then U-1 more `up`s (each one an update).
 * Run: node dist/bench/backend-size.js [members=2,6] [updates=6]
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { engineHome, StackDriver } from "../src/engine";
import { tempProject } from "../test/helpers/project";
import { startPostgres, TestPostgres } from "../test/helpers/postgres";
import { benchTable } from "./table";

const PULUMI_DEFAULTS = {
    PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS: "false",
    PULUMI_DIY_BACKEND_GZIP: "false",
    EGRESS_STATE_HISTORY: "0",
};
const EGRESS_DEFAULTS = { EGRESS_STATE_HISTORY: "3" };

function fileBytes(dir: string): number {
    let n = 0;
    for (const f of fs.readdirSync(dir, { recursive: true }) as string[]) {
        const st = fs.statSync(path.join(dir, f));
        if (st.isFile()) n += st.size;
    }
    return n;
}

async function row(
    backend: "file" | "postgres",
    settings: "pulumi" | "egress",
    members: number,
    updates: number,
    pg: TestPostgres,
): Promise<string[]> {
    const stack = `b${members}${settings[0]}`;
    const p = tempProject(stack, {
        "egress:providers": { local: { type: "local" } },
        "egress:pools": [{ name: "bench", provider: "local", replicas: members, maxReplicas: 1000 }],
    });
    const knobs = settings === "pulumi" ? PULUMI_DEFAULTS : EGRESS_DEFAULTS;
    // The prune reads the process's environment (history-prune.ts); the CLI's knobs go in the driver's.
    process.env.EGRESS_STATE_HISTORY = knobs.EGRESS_STATE_HISTORY;
    const env: Record<string, string> = { ...p.env, ...knobs };
    if (backend === "postgres") env.PULUMI_BACKEND_URL = pg.url;
    const driver = new StackDriver({
        workDir: p.dir,
        stack,
        env,
        home: { ...engineHome(), runDir: path.join(p.dir, "run") },
    });
    try {
        for (let i = 0; i < updates; i++) await driver.up({ refresh: false });
        let checkpoint: number;
        let total: number;
        if (backend === "file") {
            const dir = path.join(p.dir, "backend", ".pulumi");
            const cp = fs
                .readdirSync(path.join(dir, "stacks", "egress"))
                .find((f) => f === `${stack}.json` || f === `${stack}.json.gz`)!;
            checkpoint = fs.statSync(path.join(dir, "stacks", "egress", cp)).size;
            total = fileBytes(dir);
        } else {
            const like = `postgres/.pulumi/%/${stack}%`;
            checkpoint = Number(
                pg.sql(
                    `SELECT sum(octet_length(data::text)) FROM pulumi_state WHERE key = 'postgres/.pulumi/stacks/egress/${stack}.json' OR key = 'postgres/.pulumi/stacks/egress/${stack}.json.gz'`,
                ),
            );
            total = Number(pg.sql(`SELECT sum(octet_length(data::text)) FROM pulumi_state WHERE key LIKE '${like}'`));
        }
        await driver.destroy();
        const kb = (n: number) => (n / 1024).toFixed(1);
        return [
            `${backend} ${settings}`,
            String(members),
            String(updates),
            kb(checkpoint),
            kb(checkpoint / members),
            kb(total),
            kb(total / updates),
        ];
    } finally {
        p.cleanup();
    }
}

async function main(): Promise<void> {
    const members = (process.argv[2] ?? "2,6").split(",").map(Number);
    const updates = Number(process.argv[3] ?? 6);
    const pg = await startPostgres();
    const body: string[][] = [];
    try {
        for (const n of members)
            for (const backend of ["file", "postgres"] as const)
                for (const settings of ["pulumi", "egress"] as const)
                    body.push(await row(backend, settings, n, updates, pg));
    } finally {
        await pg.cleanup();
    }
    console.log(
        benchTable(
            ["backend, settings", "members", "updates", "checkpoint KB", "KB/member", "stack total KB", "KB/update"],
            body,
        ),
    );
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
