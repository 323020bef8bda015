/**
 * What the stack file says beside the pools' counts, as one short digest: a count change alone leaves it
 * as it was. The program records the digest it applied (stack output `appliedConfig`), so a command that
 * changes counts (the CLI's `egress scale`) knows whether an `up` of those members alone applies the
 * file, or whether other edits wait and a plain `up` is due. Secrets count as their ciphertext.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import YAML from "yaml";
import { stackFile } from "./load";

/** The digest of `stacks/Pulumi.<stack>.yaml`'s `egress:*` config with the pools' `replicas` left out; undefined without a readable file. */
export function configFingerprint(projectRoot: string, stack: string): string | undefined {
    let doc: { config?: Record<string, unknown> } | undefined;
    try {
        doc = YAML.parse(fs.readFileSync(stackFile(projectRoot, stack), "utf8"));
    } catch {
        return undefined;
    }
    const config = doc?.config ?? {};
    const pools = config["egress:pools"];
    const withoutCounts = Array.isArray(pools) ? pools.map((p) => ({ ...p, replicas: undefined })) : pools;
    const mine = { providers: config["egress:providers"], pools: withoutCounts };
    return crypto.createHash("sha256").update(JSON.stringify(mine)).digest("hex").slice(0, 16);
}
