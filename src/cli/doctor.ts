import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { loadStackConfig, scalableCounts } from "../config";
import { engineEnv, engineHome, inspectBackend, PACKAGE_ROOT, stateBackend } from "../engine";
import { replicaScope } from "../state/cluster/scope";
import { action, EXIT, GlobalOptions, projectDir } from "./context";
import { kindOf } from "../../components/registry";
import type { DoctorFinding } from "../../components/kind";
import { lockFindings } from "./doctor-locks";
import { storeFindings } from "./doctor-store";

type Finding = DoctorFinding;

/** Each check is independent: doctor reports everything wrong at once instead of stopping at the first. */
export async function runDoctor(opts: GlobalOptions & { store?: string }): Promise<Finding[]> {
    const home = engineHome();
    const tools = toolFindings(home);
    const engine = await engineFindings(home, opts.stack);
    return [
        ...tools,
        ...engine.findings,
        ...configFindings(opts, home, engine.env),
        ...lockFindings(opts.stack, engine.backend),
        ...(await replicaStoreFindings(opts, home)),
    ];
}

type EngineHome = ReturnType<typeof engineHome>;

/** What egress runs on: Node, the Pulumi CLI and its dynamic provider plugin (`npm run setup` builds both). */
function toolFindings(home: EngineHome): Finding[] {
    const out: Finding[] = [];
    const [major, minor] = process.versions.node.split(".").map(Number);
    out.push({
        check: "node",
        ok: major > 20 || (major === 20 && minor >= 11),
        detail: `v${process.versions.node}`,
        fix: "install Node.js 20.11 or newer",
    });

    const pulumi = path.join(home.binDir, "pulumi");
    const v = fs.existsSync(pulumi)
        ? cp.spawnSync(pulumi, ["version"], { encoding: "utf8" }).stdout?.trim()
        : undefined;
    out.push({
        check: "pulumi cli",
        ok: !!v,
        detail: v ? `${v} at ${pulumi}` : `not found at ${pulumi}`,
        fix: "run `npm run setup` (builds it from Go modules; needs Go >= 1.21, which fetches the 1.25 toolchain)",
    });

    const plugin = path.join(home.binDir, "pulumi-resource-pulumi-nodejs");
    out.push({
        check: "dynamic provider plugin",
        ok: fs.existsSync(plugin),
        detail: plugin,
        fix: "run `npm run setup`",
    });
    return out;
}

/**
 * What an engine run needs besides the tools: its home, the backend (and the backend itself, which the
 * lock checks read again), the secrets passphrase and the build `pulumi up` runs.
 */
async function engineFindings(
    home: EngineHome,
    stack: string,
): Promise<{ findings: Finding[]; env?: Record<string, string>; backend: Awaited<ReturnType<typeof inspectBackend>> }> {
    const out: Finding[] = [];
    let env: Record<string, string> | undefined;
    try {
        env = engineEnv(home);
    } catch (e) {
        out.push({
            check: "engine home",
            ok: false,
            detail: (e as Error).message,
            fix: `make ${home.dir} writable or set PULUMI_BACKEND_URL`,
        });
    }
    // Which backend, with its password masked, and whether it answers; its locks are judged with the others.
    const backend = await inspectBackend(home, stack);
    const kindName = { file: "file", postgres: "PostgreSQL", other: "object store / cloud" }[backend.kind];
    out.push({
        check: "backend",
        ok: backend.reachable,
        detail: `${kindName} ${backend.shown}: ${backend.reachable ? backend.detail : `cannot be reached (${backend.detail})`}`,
        fix:
            backend.kind === "file"
                ? `make the directory writable or set PULUMI_BACKEND_URL`
                : "start the backend or fix PULUMI_BACKEND_URL / --backend (host, port, credentials); commands exit 75 until it answers",
    });
    const pass = process.env.PULUMI_CONFIG_PASSPHRASE
        ? "PULUMI_CONFIG_PASSPHRASE"
        : (env?.PULUMI_CONFIG_PASSPHRASE_FILE ?? process.env.PULUMI_CONFIG_PASSPHRASE_FILE);
    out.push({
        check: "secrets passphrase",
        ok: !!pass,
        detail: pass ? `from ${pass}` : "none",
        fix: "set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE",
    });

    // What `pulumi up` runs (Pulumi.yaml `main`): without it only the automation API could run the program.
    const dist = path.join(PACKAGE_ROOT, "dist", "src", "program-main.js");
    out.push({
        check: "build",
        ok: fs.existsSync(dist),
        detail: fs.existsSync(dist) ? "dist/ present" : "dist/ missing",
        fix: "run `npm run build`",
    });
    return { findings: out, env, backend };
}

/** The stack's config, then each provider kind's own checks, once per kind with the stack's entries of that kind. */
function configFindings(opts: GlobalOptions, home: EngineHome, env: Record<string, string> | undefined): Finding[] {
    const out: Finding[] = [];
    try {
        const cfg = loadStackConfig(projectDir(opts), opts.stack);
        out.push({
            check: `stack ${opts.stack} config`,
            ok: true,
            detail: `${Object.keys(cfg.providers).length} provider(s), ${cfg.pools.length} pool(s)`,
        });
        const byKind = new Map<string, { name: string; entry: (typeof cfg.providers)[string] }[]>();
        for (const [name, entry] of Object.entries(cfg.providers))
            byKind.set(entry.type, [...(byKind.get(entry.type) ?? []), { name, entry }]);
        const kindEnv = {
            pulumiHome: env?.PULUMI_HOME ?? home.pulumiHome,
            binDir: home.binDir,
            packageRoot: PACKAGE_ROOT,
        };
        for (const entries of byKind.values()) out.push(...(kindOf(entries[0].entry).doctor?.(entries, kindEnv) ?? []));
    } catch (e) {
        out.push({
            check: `stack ${opts.stack} config`,
            ok: false,
            detail: (e as Error).message,
            fix: "fix the paths named above in stacks/Pulumi.<stack>.yaml",
        });
    }
    return out;
}

/** The lease store replicas would share (`--store`), judged against this stack's pools and this home's replica scope. */
async function replicaStoreFindings(opts: GlobalOptions & { store?: string }, home: EngineHome): Promise<Finding[]> {
    let counts: Record<string, number> | undefined;
    try {
        counts = scalableCounts(loadStackConfig(projectDir(opts), opts.stack));
    } catch {
        // reported as the stack's config finding
    }
    // A home no replica ran from has no id yet: the doctor makes none, it reads.
    const idFile = path.join(home.runDir, "home-id");
    const scope = replicaScope({
        projectRoot: projectDir(opts),
        stack: opts.stack,
        homeId: fs.existsSync(idFile) ? fs.readFileSync(idFile, "utf8").trim() : "(this home, no id yet)",
        backend: stateBackend(home),
    });
    return storeFindings(opts.store, opts.stack, counts, scope);
}

export function registerDoctor(program: Command): void {
    program
        .command("doctor")
        .description(
            "check Node, the engine, the backend (reachable, stale locks), passphrase, stack config, provider prerequisites and the lease store, and say how to fix each",
        )
        // No default shown from EGRESS_STORE: --help would print the URL, password and all.
        .option(
            "--store <url>",
            "also check the lease store `egress serve` would use (redis://… or redis+sentinel://…); also $EGRESS_STORE",
        )
        .action(
            action(async (_o, cmd) => {
                const opts = cmd.optsWithGlobals() as GlobalOptions & { store?: string };
                const findings = await runDoctor(opts);
                if (opts.json)
                    process.stdout.write(JSON.stringify({ ok: findings.every((f) => f.ok), findings }) + "\n");
                else
                    for (const f of findings)
                        process.stdout.write(
                            `${f.ok ? "ok  " : "FAIL"}  ${f.check}: ${f.detail}${!f.ok && f.fix ? `\n      fix: ${f.fix}` : ""}\n`,
                        );
                if (!findings.every((f) => f.ok)) process.exitCode = EXIT.prerequisite;
            }),
        );
}
