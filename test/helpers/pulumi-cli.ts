/** The real Pulumi CLI on a temp project's stack, with the environment the driver gives it (tests edit state with it). */
import * as cp from "node:child_process";
import * as path from "node:path";
import { engineEnv, engineHome } from "../../src/engine";

export function pulumiCli(project: { dir: string; env: Record<string, string> }, ...args: string[]): string {
    const home = engineHome();
    const env = { ...process.env, ...engineEnv(home, { ...process.env, ...project.env }), ...project.env };
    const r = cp.spawnSync(path.join(home.binDir, "pulumi"), [...args, "--non-interactive"], { cwd: project.dir, env, encoding: "utf8", timeout: 120_000 });
    if (r.status !== 0) throw new Error(`pulumi ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
}
