import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { ConfigProblem, configPath, CloudInit, PoolConfig } from "../model";
import { ConfigError, problemsFromZod } from "./errors";
import { readCloudInit, squidHttpPorts, userDataText } from "../model/cloud-init";
import { EgressConfig, egressConfigSchema } from "./schema";
import { KIND_NAMES, kindOf } from "../../components/registry";

/** The config keys this program reads; any other `egress:*` key in a stack file is a typo. */
const KNOWN_KEYS = ["egress:providers", "egress:pools"];

/** Path of a stack's settings file (Pulumi.yaml sets `stackConfigDir: stacks`). */
export function stackFile(projectRoot: string, stack: string): string {
    return path.join(projectRoot, "stacks", `Pulumi.${stack}.yaml`);
}

/** Reads `stacks/Pulumi.<stack>.yaml` and validates its `egress:*` config. Throws ConfigError. */
export function loadStackConfig(projectRoot: string, stack: string): EgressConfig {
    const file = stackFile(projectRoot, stack);
    if (!fs.existsSync(file))
        throw new ConfigError([
            {
                path: file,
                rule: `stack file not found; create it (examples: stacks/Pulumi.example-*.yaml, stacks/seeds/dev.yaml)`,
            },
        ]);
    let doc: any;
    try {
        doc = YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
    } catch (e) {
        throw new ConfigError([{ path: file, rule: `not valid YAML: ${(e as Error).message}` }]);
    }
    const config = doc.config ?? {};
    const unknown = Object.keys(config).filter((k) => k.startsWith("egress:") && !KNOWN_KEYS.includes(k));
    if (unknown.length)
        throw new ConfigError(
            unknown.map((k) => ({ path: k, rule: `unknown key; expected one of ${KNOWN_KEYS.join(", ")}` })),
            file,
        );
    return parseEgressConfig(
        { providers: config["egress:providers"], pools: config["egress:pools"] },
        projectRoot,
        file,
    );
}

/** Validates raw `{providers, pools}` (from a stack file or `pulumi.Config`). Throws ConfigError naming every problem. */
export function parseEgressConfig(raw: unknown, projectRoot: string, source?: string): EgressConfig {
    const parsed = egressConfigSchema.safeParse(raw);
    if (!parsed.success) throw new ConfigError(problemsFromZod(parsed.error, raw, KIND_NAMES), source);
    const problems = crossCheck(parsed.data, projectRoot);
    problems.push(...fixMembers(parsed.data, raw), ...checkRotation(parsed.data));
    if (problems.length) throw new ConfigError(problems, source);
    return parsed.data;
}

/**
 * The member count of a pool whose provider fixes it (e.g. one member per listed proxy), or
 * undefined when `replicas` is the pool's to choose. Such a pool is never scaled and its members are never
 * replaced: there is nothing to replace them with.
 */
export function fixedReplicas(cfg: EgressConfig, pool: PoolConfig): number | undefined {
    const entry = cfg.providers[pool.provider];
    return entry ? kindOf(entry).fixedReplicas?.(entry) : undefined;
}

/** Why a pool cannot be scaled, or undefined when it can. */
export function scaleRefusal(cfg: EgressConfig, pool: PoolConfig): string | undefined {
    const fixed = fixedReplicas(cfg, pool);
    if (fixed === undefined) return undefined;
    return `pool "${pool.name}" cannot be scaled: its ${fixed} member(s) follow provider "${pool.provider}" (kind \`${cfg.providers[pool.provider].type}\`); change that entry instead`;
}

/**
 * Why a scale request for an autoscaled pool is refused (the service sets its replicas), with the
 * bounds and where to change them; undefined when the pool is not autoscaled. The API's refusal and
 * the one `egress scale` gives before queueing a request for the replicas' leader.
 */
export function autoscaleRefusal(
    cfg: EgressConfig,
    pool: PoolConfig,
    stack: string,
): { message: string; path: string; min: number; max: number } | undefined {
    if (!pool.autoscale) return undefined;
    const { min, max } = pool.autoscale;
    const path = `egress:pools[${cfg.pools.indexOf(pool)}].autoscale`;
    return {
        message: `pool "${pool.name}" is autoscaled (min ${min}, max ${max}): the service sets its replicas; change the bounds at ${path} in stacks/Pulumi.${stack}.yaml (or remove it to scale by hand)`,
        path,
        min,
        max,
    };
}

/** Pools of fixed members never have members replaced: `replaceUnhealthyAfterSeconds` is 0 for them (set otherwise: a problem). */
function fixMembers(cfg: EgressConfig, raw: unknown): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    cfg.pools.forEach((pool, i) => {
        if (fixedReplicas(cfg, pool) === undefined) return;
        const given = (raw as { pools?: { replaceUnhealthyAfterSeconds?: unknown }[] })?.pools?.[i]
            ?.replaceUnhealthyAfterSeconds;
        if (given !== undefined && given !== 0)
            out.push({
                path: configPath(["pools", i, "replaceUnhealthyAfterSeconds"]),
                rule: `must be 0 or unset: members of a \`${cfg.providers[pool.provider].type}\` provider are never replaced`,
                value: given,
            });
        pool.replaceUnhealthyAfterSeconds = 0;
    });
    return out;
}

/** The lowest `rotateAfterSeconds` accepted outside tests: a shorter age churns members faster than they pay back their start. */
export const MIN_ROTATE_SECONDS = 60;

/**
 * The floor in force: MIN_ROTATE_SECONDS, or what EGRESS_TEST_MIN_ROTATE_SECONDS says (tests rotate within
 * seconds; docs/decisions/0051-rotate-age.md). Read here, at config load, by the service and the engine's program alike
 * (src/engine/child-env.ts passes it through), so both accept the same stack file.
 */
export function rotateFloorSeconds(env: NodeJS.ProcessEnv = process.env): number {
    const raw = env.EGRESS_TEST_MIN_ROTATE_SECONDS;
    const n = raw === undefined || raw === "" ? NaN : Number(raw);
    return Number.isInteger(n) && n >= 1 ? n : MIN_ROTATE_SECONDS;
}

/** `rotateAfterSeconds` is at least the floor; it and `rotateOnBlocks` are unset on pools whose members are never replaced (fixed members). */
function checkRotation(cfg: EgressConfig): ConfigProblem[] {
    const floor = rotateFloorSeconds();
    const out: ConfigProblem[] = [];
    cfg.pools.forEach((pool, i) => {
        if (pool.rotateOnBlocks && fixedReplicas(cfg, pool) !== undefined)
            out.push({
                path: configPath(["pools", i, "rotateOnBlocks"]),
                rule: `must be unset: members of a \`${cfg.providers[pool.provider].type}\` provider are never replaced`,
                value: pool.rotateOnBlocks,
            });
        const value = pool.rotateAfterSeconds;
        if (value === undefined) return;
        const path = configPath(["pools", i, "rotateAfterSeconds"]);
        if (fixedReplicas(cfg, pool) !== undefined)
            out.push({
                path,
                rule: `must be unset: members of a \`${cfg.providers[pool.provider].type}\` provider are never replaced`,
                value,
            });
        else if (value < floor)
            out.push({
                path,
                rule: `must be at least ${floor} (seconds${floor === MIN_ROTATE_SECONDS ? "; tests may lower it with EGRESS_TEST_MIN_ROTATE_SECONDS" : ", EGRESS_TEST_MIN_ROTATE_SECONDS"})`,
                value,
            });
    });
    return out;
}

/** Rules that span sections: pools name existing providers, placements name catalog keys, ports agree with cloud-init. */
export function crossCheck(cfg: EgressConfig, projectRoot: string): ConfigProblem[] {
    const problems: ConfigProblem[] = [];
    const names = new Set<string>();
    cfg.pools.forEach((pool, i) => {
        const at = (...p: (string | number)[]) => configPath(["pools", i, ...p]);
        if (names.has(pool.name))
            problems.push({ path: at("name"), rule: "duplicates another pool's name", value: pool.name });
        names.add(pool.name);
        const entry = cfg.providers[pool.provider];
        if (!entry) {
            const known = Object.keys(cfg.providers).join(", ") || "none";
            problems.push({
                path: at("provider"),
                rule: `must name an entry of egress:providers (known: ${known})`,
                value: pool.provider,
            });
            return;
        }
        const kind = kindOf(entry);
        problems.push(
            ...(kind.checkPool?.(
                entry,
                pool,
                at,
                cfg.pools.filter((p) => p.provider === pool.provider),
            ) ?? []),
        );
        if (pool.membersPerStack !== undefined && !kind.shardable)
            problems.push({
                path: at("membersPerStack"),
                rule: `must be unset: members of a \`${entry.type}\` provider share resources their pool creates, so they cannot live in other stacks (kinds that can: ${KIND_NAMES.filter((k) => kindOf({ type: k } as never).shardable).join(", ")})`,
                value: pool.membersPerStack,
            });
        const fixed = kind.fixedReplicas?.(entry);
        if (fixed !== undefined && pool.replicas !== fixed)
            problems.push({
                path: at("replicas"),
                rule: `must be ${fixed}: the members of a \`${entry.type}\` provider follow its entry (${pool.provider}), not a count`,
                value: pool.replicas,
            });
        if (fixed !== undefined && pool.autoscale)
            problems.push({
                path: at("autoscale"),
                rule: `must be unset: the members of a \`${entry.type}\` provider follow its entry (${pool.provider}), not demand`,
            });
        problems.push(...checkPorts(pool, projectRoot, at));
    });
    return problems;
}

/**
 * A member whose cloud-init sets squid's `http_port` must declare one of those ports, or health checks
 * probe the wrong port. gzip user-data is read gunzipped, as cloud-init reads it.
 */
function checkPorts(pool: PoolConfig, root: string, at: (...p: (string | number)[]) => string): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    const read = (ci: CloudInit, where: string): string | undefined => {
        let bytes: Buffer;
        try {
            bytes = readCloudInit(ci, root);
        } catch (e) {
            out.push({ path: where, rule: `cannot read cloud-init file: ${(e as Error).message}`, value: ci.file });
            return undefined;
        }
        const text = userDataText(bytes);
        if (text === undefined)
            out.push({
                path: where,
                rule: "cloud-init user-data must be UTF-8 text or gzip of it (cloud-init reads nothing else)",
                value: ci.file,
            });
        return text;
    };
    const listed = (ports: number[]) => [...new Set(ports)].join(", ");
    const shared = pool.cloudInit
        ? read(pool.cloudInit, at("cloudInit", pool.cloudInit.file ? "file" : "inline"))
        : undefined;
    const sharedPorts = shared ? squidHttpPorts(shared) : [];
    if (sharedPorts.length && !sharedPorts.includes(pool.port))
        out.push({
            path: at("port"),
            rule: `must match the squid http_port ${listed(sharedPorts)} set by the pool's cloud-init`,
            value: pool.port,
        });
    pool.members.forEach((m, j) => {
        const text = m.cloudInit ? read(m.cloudInit, at("members", j, "cloudInit")) : shared;
        const declared = m.port ?? pool.port;
        const set = text ? squidHttpPorts(text) : [];
        if (set.length && !set.includes(declared))
            out.push({
                path: at("members", j, "port"),
                rule: `must be ${set.length > 1 ? "one of " : ""}${listed(set)}: member ${m.index}'s cloud-init sets squid http_port ${listed(set)}`,
                value: declared,
            });
    });
    return out;
}
