/**
 * egress as an earlier commit had it, built once per checkout from this repository's history into the temp
 * dir: tests make a stack with it, as an existing user's would be, and then upgrade. Such releases:
 * the one before installation ids (LEGACY_COMMIT), the one before the folder `kinds` became components/
 * (BEFORE_COMPONENTS_COMMIT), the last one with provider code in state (BEFORE_LOADERS_COMMIT) and the
 * last one whose Kubernetes members were @pulumi/kubernetes resources (BEFORE_KUBE_MEMBER_COMMIT). Shares this checkout's node_modules (the dependencies did not change). Fails
 * loudly without git or the commit (a shallow clone): it never skips.
 */
import * as cp from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine";
import { cliAsync, type ProcProject } from "./processes";

/** The last commit before installation ids. */
export const LEGACY_COMMIT = "528a80a";
/** The last commit with the components in their old folder, `kinds` (the local proxy's server script path is a resource input). */
export const BEFORE_COMPONENTS_COMMIT = "6df416d";
/** The last commit whose Kubernetes members are a Deployment and a Service in state (issue 33). */
export const BEFORE_KUBE_MEMBER_COMMIT = "3c3e9a2";
/** The last commit whose KVM members are an Overlay, a SeedDisk and a Domain in state (issue 33). */
export const BEFORE_KVM_MEMBER_COMMIT = "93018a1";
/** The last commit whose dynamic resources store their provider's code in state (`__provider`, issue 33). */
export const BEFORE_LOADERS_COMMIT = "e42934d";

function run(cmd: string, args: string[], cwd: string): void {
    const r = cp.spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 600_000, maxBuffer: 64 << 20, shell: false });
    if (r.status !== 0)
        throw new Error(
            `${cmd} ${args.join(" ")} (in ${cwd}) exited ${r.status ?? r.signal}: ${r.error?.message ?? ""}${r.stderr}${r.stdout}`.slice(
                0,
                4000,
            ),
        );
}

/** The root (with dist/src/cli.js) of the release at `commit`, built on first use (~1 min on 2 cores). */
export function releaseAt(commit: string): string {
    // One build per checkout: it links the checkout's node_modules, which must outlive it (a build shared
    // across checkouts dangled once the checkout that made it was removed).
    const root = path.join(
        os.tmpdir(),
        `egress-legacy-${commit}-${crypto.createHash("sha256").update(PACKAGE_ROOT).digest("hex").slice(0, 8)}`,
    );
    if (fs.existsSync(path.join(root, "dist", "src", "cli.js"))) return root;
    // Built beside, then renamed: two test files building at once never see a half-built tree.
    const tmp = `${root}.build-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp);
    const archive = path.join(tmp, "src.tar");
    run("git", ["-C", PACKAGE_ROOT, "archive", "-o", archive, commit], PACKAGE_ROOT);
    run("tar", ["-xf", archive, "-C", tmp], tmp);
    fs.rmSync(archive);
    fs.symlinkSync(path.join(PACKAGE_ROOT, "node_modules"), path.join(tmp, "node_modules"));
    // The release's own sources, whatever its folders were called: its tsconfig's include without tests, bench and clients.
    const own = JSON.parse(fs.readFileSync(path.join(tmp, "tsconfig.json"), "utf8")) as { include: string[] };
    const include = own.include.filter((g) => !/^(test|bench|clients)\//.test(g));
    fs.writeFileSync(path.join(tmp, "tsconfig.legacy.json"), JSON.stringify({ extends: "./tsconfig.json", include }));
    run(
        process.execPath,
        [path.join(PACKAGE_ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.legacy.json"],
        tmp,
    );
    try {
        fs.renameSync(tmp, root);
    } catch (e) {
        if (!fs.existsSync(path.join(root, "dist", "src", "cli.js"))) throw e;
        fs.rmSync(tmp, { recursive: true, force: true }); // another process won the race
    }
    return root;
}

/** Runs the release at `commit` (default: the one before installation ids) as `egress <args>` on a project, as cli() in processes.ts does for this one. */
export function legacyCli(
    p: ProcProject,
    args: string[],
    timeoutMs = 240_000,
    commit = LEGACY_COMMIT,
): { code: number; stdout: string; stderr: string } {
    const r = cp.spawnSync(process.execPath, [legacyEntry(commit), ...args, "--stack", p.stack, "--cwd", p.dir], {
        env: p.env,
        encoding: "utf8",
        timeout: timeoutMs,
    });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The release's `egress` entry point (dist/src/cli.js), built on first use. */
function legacyEntry(commit: string): string {
    return path.join(releaseAt(commit), "dist", "src", "cli.js");
}

/**
 * legacyCli without blocking this process, for tests whose own servers (an image server) the command talks
 * to. The release is built first (synchronously, ~1 min on a cold checkout).
 */
export function legacyCliAsync(
    p: ProcProject,
    args: string[],
    timeoutMs = 300_000,
    commit = LEGACY_COMMIT,
): Promise<{ code: number; stdout: string; stderr: string }> {
    return cliAsync(p, args, timeoutMs, legacyEntry(commit));
}
