import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine/env";

/** Serializes a dynamic provider exactly as `pulumi.dynamic.Resource` does (the closure serializer). */
export async function serializeProvider(provider: object): Promise<string> {
    const sc = require("@pulumi/pulumi/runtime/closure/serializeClosure");
    const sf = await sc.serializeFunction(() => provider, { allowSecrets: true });
    return sf.text as string;
}

export interface Call {
    method: "create" | "read" | "diff" | "update" | "delete" | "check";
    /** Arguments; the string "$id" is replaced by the id the last `create` returned, "$outs" by its outputs. */
    args: unknown[];
}

/**
 * Loads serialized provider text the way `@pulumi/pulumi/cmd/dynamic-provider` does
 * (require-from-string, then `.handler()`), in a fresh Node process with nothing of the test loaded,
 * and runs `calls` in order. Returns each call's result. Proves the provider carries no captured state.
 */
export function runSerialized(text: string, calls: Call[], timeoutMs = 60_000): unknown[] {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-serialized-"));
    try {
        fs.writeFileSync(path.join(dir, "provider.txt"), text);
        fs.writeFileSync(path.join(dir, "calls.json"), JSON.stringify(calls));
        const script = `
            const fs = require("fs");
            const provider = require("require-from-string")(fs.readFileSync("provider.txt", "utf8")).handler();
            const calls = JSON.parse(fs.readFileSync("calls.json", "utf8"));
            (async () => {
                const results = []; let id, outs;
                const sub = (v) => v === "$id" ? id : v === "$outs" ? outs : v;
                for (const c of calls) {
                    const r = await provider[c.method](...c.args.map(sub));
                    if (c.method === "create") { id = r.id; outs = r.outs; }
                    results.push(r === undefined ? null : r);
                }
                process.stdout.write(JSON.stringify(results));
            })().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });`;
        const r = cp.spawnSync(process.execPath, ["-e", script], {
            cwd: dir,
            encoding: "utf8",
            timeout: timeoutMs,
            env: { ...process.env, NODE_PATH: path.join(PACKAGE_ROOT, "node_modules") },
        });
        if (r.status !== 0) throw new Error(`serialized provider failed (${r.status}): ${r.stderr}`);
        return JSON.parse(r.stdout);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
