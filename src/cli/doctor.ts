import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { loadStackConfig } from "../config";
import { engineEnv, engineHome, PACKAGE_ROOT } from "../engine";
import { action, EXIT, GlobalOptions, projectDir } from "./context";
import { findIsoTool } from "../../components/kvm/seed-iso";
import { lockFindings } from "./doctor-locks";

interface Finding {
    check: string;
    ok: boolean;
    detail: string;
    /** What to do about it, when not ok. */
    fix?: string;
}

function which(bin: string): string | undefined {
    const r = cp.spawnSync("sh", ["-c", 'command -v "$1"', "sh", bin], { encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Each check is independent: doctor reports everything wrong at once instead of stopping at the first. */
export function runDoctor(opts: GlobalOptions): Finding[] {
    const out: Finding[] = [];
    const home = engineHome();
    const [major, minor] = process.versions.node.split(".").map(Number);
    out.push({ check: "node", ok: major > 20 || (major === 20 && minor >= 11), detail: `v${process.versions.node}`, fix: "install Node.js 20.11 or newer" });

    const pulumi = path.join(home.binDir, "pulumi");
    const v = fs.existsSync(pulumi) ? cp.spawnSync(pulumi, ["version"], { encoding: "utf8" }).stdout?.trim() : undefined;
    out.push({ check: "pulumi cli", ok: !!v, detail: v ? `${v} at ${pulumi}` : `not found at ${pulumi}`, fix: "run `npm run setup` (builds it from Go modules; needs Go >= 1.21, which fetches the 1.25 toolchain)" });

    const plugin = path.join(home.binDir, "pulumi-resource-pulumi-nodejs");
    out.push({ check: "dynamic provider plugin", ok: fs.existsSync(plugin), detail: plugin, fix: "run `npm run setup`" });

    let env: Record<string, string> | undefined;
    try {
        env = engineEnv(home);
        out.push({ check: "backend", ok: true, detail: env.PULUMI_BACKEND_URL });
    } catch (e) {
        out.push({ check: "backend", ok: false, detail: (e as Error).message, fix: `make ${home.dir} writable or set PULUMI_BACKEND_URL` });
    }
    const pass = process.env.PULUMI_CONFIG_PASSPHRASE ? "PULUMI_CONFIG_PASSPHRASE" : env?.PULUMI_CONFIG_PASSPHRASE_FILE ?? process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
    out.push({ check: "secrets passphrase", ok: !!pass, detail: pass ? `from ${pass}` : "none", fix: "set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE" });

    const dist = path.join(PACKAGE_ROOT, "dist", "components", "local", "proxy-server.js");
    out.push({ check: "build", ok: fs.existsSync(dist), detail: fs.existsSync(dist) ? "dist/ present" : "dist/ missing", fix: "run `npm run build`" });

    try {
        const cfg = loadStackConfig(projectDir(opts), opts.stack);
        out.push({ check: `stack ${opts.stack} config`, ok: true, detail: `${Object.keys(cfg.providers).length} provider(s), ${cfg.pools.length} pool(s)` });
        const kinds = new Set(Object.values(cfg.providers).map((p) => p.type));
        if (kinds.has("kvm")) {
            out.push({ check: "kvm: virsh", ok: !!which("virsh"), detail: which("virsh") ?? "not on PATH", fix: "apt-get install libvirt-clients" });
            // The same lookup the SeedDisk provider does, so doctor and `up` never disagree.
            let iso: string | undefined;
            try {
                iso = findIsoTool().cmd;
            } catch {
                iso = undefined;
            }
            out.push({ check: "kvm: ISO builder", ok: !!iso, detail: iso ?? "none of xorriso, genisoimage, mkisofs on PATH", fix: "apt-get install xorriso" });
        }
        for (const k of ["gcp", "kubernetes"] as const) if (kinds.has(k)) out.push(pluginFinding(k, env?.PULUMI_HOME ?? home.pulumiHome, home.binDir));
    } catch (e) {
        out.push({ check: `stack ${opts.stack} config`, ok: false, detail: (e as Error).message, fix: "fix the paths named above in stacks/Pulumi.<stack>.yaml" });
    }
    out.push(...lockFindings(opts.stack));
    return out;
}

/**
 * The provider plugin the installed SDK (`@pulumi/<kind>`) asks the engine for: the same version, read
 * from its package.json so an SDK upgrade changes the advice with it. The engine downloads it on first
 * use unless PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION is set; offline it must be installed beforehand.
 */
export function pluginFinding(kind: "gcp" | "kubernetes", pulumiHome: string, binDir: string): Finding {
    const version = sdkVersion(kind);
    const dir = path.join(pulumiHome, "plugins");
    const want = `resource-${kind}-v${version}`;
    const check = `${kind}: provider plugin ${version}`;
    const has = fs.existsSync(path.join(dir, want));
    const install = `PULUMI_HOME=${pulumiHome} ${path.join(binDir, "pulumi")} plugin install resource ${kind} ${version}`;
    // A plugin on PATH wins over the plugin cache. egress's tests put their own build there.
    const ambient = onPath(`pulumi-resource-${kind}`);
    if (ambient && TEST_BUILD.test(path.dirname(ambient)))
        return {
            check, ok: false,
            detail: `the engine would use ${ambient} from PATH: egress's test build (scripts/build-k8s.sh, an unreleased provider commit run against a simulated cluster), not the released plugin`,
            fix: `for a real cluster, take ${path.dirname(ambient)} off PATH and install the released plugin: ${install}`,
        };
    if (ambient) return { check, ok: true, detail: `the engine uses ${ambient} from PATH` };
    if (has) return { check, ok: true, detail: `installed in ${dir}` };
    // Missing is only a problem when the engine may not fetch it: with acquisition on it downloads the
    // plugin on first use, and doctor still names the command for a machine that turns out to be offline.
    if (process.env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION !== "true")
        return { check, ok: true, detail: `not installed yet: the engine downloads it on first use (offline, run: ${install})` };
    return { check, ok: false, detail: `no ${want} in ${dir} and automatic plugin acquisition is disabled`, fix: `on a machine with internet access: ${install}` };
}

/** The bin directory of scripts/build-k8s.sh's cache: `<cache>/egress-k8s/<key>/bin`. */
const TEST_BUILD = /[\\/]egress-k8s[\\/][0-9a-f]{16}[\\/]bin$/;

function onPath(name: string): string | undefined {
    for (const d of (process.env.PATH ?? "").split(path.delimiter).filter(Boolean)) {
        const f = path.join(d, name);
        try {
            fs.accessSync(f, fs.constants.X_OK);
            if (fs.statSync(f).isFile()) return f;
        } catch {
            /* not here */
        }
    }
    return undefined;
}

function sdkVersion(kind: "gcp" | "kubernetes"): string {
    const file = require.resolve(`@pulumi/${kind}/package.json`, { paths: [PACKAGE_ROOT] });
    return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version;
}

export function registerDoctor(program: Command): void {
    program
        .command("doctor")
        .description("check Node, the engine, backend, passphrase, stack config and provider prerequisites, and say how to fix each")
        .action(action(async (_o, cmd) => {
            const opts = cmd.optsWithGlobals() as GlobalOptions;
            const findings = runDoctor(opts);
            if (opts.json) process.stdout.write(JSON.stringify({ ok: findings.every((f) => f.ok), findings }) + "\n");
            else
                for (const f of findings)
                    process.stdout.write(`${f.ok ? "ok  " : "FAIL"}  ${f.check}: ${f.detail}${!f.ok && f.fix ? `\n      fix: ${f.fix}` : ""}\n`);
            if (!findings.every((f) => f.ok)) process.exitCode = EXIT.prerequisite;
        }));
}
