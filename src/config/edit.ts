import * as fs from "node:fs";
import YAML from "yaml";
import { ConfigError } from "./errors";
import type { EgressConfig } from "./schema";
import { loadStackConfig, scaleRefusal, stackFile } from "./load";

/**
 * Validates a scale request against the stack config without touching anything.
 * `replicas` arrives as the user typed it (CLI string or JSON value) so every bad shape gets its own message.
 */
export function checkReplicas(projectRoot: string, stack: string, pool: string, replicas: unknown): number {
    const cfg = loadStackConfig(projectRoot, stack);
    const found = cfg.pools.find((p) => p.name === pool);
    if (!found) {
        const known = cfg.pools.map((p) => p.name).join(", ") || "none";
        throw new ConfigError([{ path: "egress:pools", rule: `has no pool named "${pool}" (known: ${known})` }]);
    }
    const refused = scaleRefusal(cfg, found);
    if (refused) throw new ConfigError([{ path: `egress:pools[${cfg.pools.indexOf(found)}]`, rule: refused }]);
    const n = typeof replicas === "string" && /^-?\d+(\.\d+)?$/.test(replicas.trim()) ? Number(replicas) : replicas;
    const at = `egress:pools[${cfg.pools.indexOf(found)}].replicas`;
    if (typeof n !== "number" || !Number.isFinite(n))
        throw new ConfigError([{ path: at, rule: "replicas must be a whole number", value: replicas }]);
    if (!Number.isInteger(n)) throw new ConfigError([{ path: at, rule: "replicas must be a whole number", value: n }]);
    if (n < 0) throw new ConfigError([{ path: at, rule: "replicas must be 0 or more", value: n }]);
    if (n > found.maxReplicas)
        throw new ConfigError([
            { path: at, rule: `replicas must not exceed maxReplicas (${found.maxReplicas})`, value: n },
        ]);
    return n;
}

/**
 * Writes a pool's desired replicas into `stacks/Pulumi.<stack>.yaml`, keeping comments, order and
 * secrets as they are, so `pulumi up`/`egress up` by a person converges to the same count.
 * Atomic (write + rename). Returns the previous count.
 */
export function setPoolReplicas(
    projectRoot: string,
    stack: string,
    pool: string,
    replicas: unknown,
): { previous: number; replicas: number } {
    const n = checkReplicas(projectRoot, stack, pool, replicas);
    const file = stackFile(projectRoot, stack);
    const doc = YAML.parseDocument(fs.readFileSync(file, "utf8"));
    const pools = doc.getIn(["config", "egress:pools"]) as YAML.YAMLSeq;
    const i = pools.items.findIndex((item) => (item as YAML.YAMLMap).get("name") === pool);
    const previous = Number((pools.items[i] as YAML.YAMLMap).get("replicas"));
    (pools.items[i] as YAML.YAMLMap).set("replicas", n);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, doc.toString());
    fs.renameSync(tmp, file);
    return { previous, replicas: n };
}

/** The counts of the pools a scale may set (not those a provider fixes): what the store's desired counts hold. */
export function scalableCounts(cfg: EgressConfig): Record<string, number> {
    return Object.fromEntries(cfg.pools.filter((p) => !scaleRefusal(cfg, p)).map((p) => [p.name, p.replicas]));
}
