/**
 * The installation a plain `pulumi up` (no egress driver) proposes: the program reads the stack's state
 * itself. A file backend (PULUMI_BACKEND_URL, as the CLI was started with) is read straight from its
 * checkpoint; any other backend through `pulumi stack export` with the same environment.
 */
import * as cp from "node:child_process";
import { checkpointResources } from "./checkpoint";
import { installationInState } from "./installation";
import type { Installation } from "../model";

export function plainRunInstallation(project: string, stack: string): Installation {
    const url = process.env.PULUMI_BACKEND_URL;
    const fromFile = url?.startsWith("file://") ? checkpointResources(url.slice("file://".length), stack) : undefined;
    return installationInState(fromFile ?? exportedResources(stack), project, stack).installation;
}

function exportedResources(stack: string): { type: string }[] {
    // The CLI that runs this program is on PATH (docs/engine.md); export takes no lock, so it works mid-update.
    const r = cp.spawnSync("pulumi", ["stack", "export", "--stack", stack, "--non-interactive"], {
        encoding: "utf8",
        timeout: 60_000,
    });
    if (r.status !== 0)
        throw new Error(
            `cannot read stack ${stack}'s state to find its installation id (\`pulumi stack export\` ${r.error ? `failed: ${r.error.message}` : `exited ${r.status ?? r.signal}: ${r.stderr.trim().split("\n").pop()}`}); ` +
                "put the Pulumi CLI on PATH, or run `egress up` instead",
        );
    return (JSON.parse(r.stdout)?.deployment?.resources ?? []) as { type: string }[];
}
