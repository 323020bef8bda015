import * as fs from "node:fs";
import * as path from "node:path";
import type { ProxyMember } from "../../components/member";
import type { EngineHome } from "./env";

/** Pulumi project name of every egress stack (Pulumi.yaml `name`). */
export const PROJECT = "egress";

/**
 * The directory of a file:// backend in effect for these settings (the same precedence engineEnv
 * applies: extra env, then the process's, then the home's default), or undefined for other backends.
 */
export function fileBackendDir(home: EngineHome, extraEnv: Record<string, string | undefined> = {}): string | undefined {
    const url = extraEnv.PULUMI_BACKEND_URL ?? process.env.PULUMI_BACKEND_URL ?? `file://${home.backendDir}`;
    return url.startsWith("file://") ? url.slice("file://".length) : undefined;
}

/** Where a file backend keeps the checkpoints of egress stacks: `<backend>/.pulumi/stacks/egress/`. */
export function checkpointDir(backendDir: string): string {
    return path.join(backendDir, ".pulumi", "stacks", PROJECT);
}

/**
 * The stack output `proxies` straight from the stack's checkpoint file, without starting the Pulumi CLI
 * (which takes long enough to matter when the service follows an outside `up`). Undefined when it cannot
 * be read this way — no checkpoint, compressed, or the output is a secret — and the caller then asks the
 * engine.
 */
export function checkpointProxies(backendDir: string, stack: string): ProxyMember[] | undefined {
    let text: string;
    try {
        text = fs.readFileSync(path.join(checkpointDir(backendDir), `${stack}.json`), "utf8");
    } catch {
        return undefined;
    }
    try {
        const resources = (JSON.parse(text)?.checkpoint?.latest?.resources ?? []) as { type: string; outputs?: Record<string, unknown> }[];
        const root = resources.find((r) => r.type === "pulumi:pulumi:Stack");
        if (!root) return [];
        const proxies = root.outputs?.proxies;
        if (proxies === undefined) return [];
        return Array.isArray(proxies) ? (proxies as ProxyMember[]) : undefined;
    } catch {
        return undefined; // written while we read (not atomic on every filesystem): the engine's answer is exact
    }
}
