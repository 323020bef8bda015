import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { ConfigError, ConfigProblem, configPath, problemsFromZod } from "./errors";
import { readCloudInit, squidHttpPorts, userDataText } from "./cloud-init";
import { CloudInit, EgressConfig, egressConfigSchema, PoolConfig, ProviderConfig } from "./schema";

/** The config keys this program reads; any other `egress:*` key in a stack file is a typo. */
const KNOWN_KEYS = ["egress:providers", "egress:pools"];

/** Path of a stack's settings file (Pulumi.yaml sets `stackConfigDir: stacks`). */
export function stackFile(projectRoot: string, stack: string): string {
    return path.join(projectRoot, "stacks", `Pulumi.${stack}.yaml`);
}

/** Reads `stacks/Pulumi.<stack>.yaml` and validates its `egress:*` config. Throws ConfigError. */
export function loadStackConfig(projectRoot: string, stack: string): EgressConfig {
    const file = stackFile(projectRoot, stack);
    if (!fs.existsSync(file)) throw new ConfigError([{ path: file, rule: `stack file not found; create it (see stacks/Pulumi.dev.yaml)` }]);
    let doc: any;
    try {
        doc = YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
    } catch (e) {
        throw new ConfigError([{ path: file, rule: `not valid YAML: ${(e as Error).message}` }]);
    }
    const config = doc.config ?? {};
    const unknown = Object.keys(config).filter((k) => k.startsWith("egress:") && !KNOWN_KEYS.includes(k));
    if (unknown.length) throw new ConfigError(unknown.map((k) => ({ path: k, rule: `unknown key; expected one of ${KNOWN_KEYS.join(", ")}` })), file);
    return parseEgressConfig({ providers: config["egress:providers"], pools: config["egress:pools"] }, projectRoot, file);
}

/** Validates raw `{providers, pools}` (from a stack file or `pulumi.Config`). Throws ConfigError naming every problem. */
export function parseEgressConfig(raw: unknown, projectRoot: string, source?: string): EgressConfig {
    const parsed = egressConfigSchema.safeParse(raw);
    if (!parsed.success) throw new ConfigError(problemsFromZod(parsed.error, raw), source);
    const problems = crossCheck(parsed.data, projectRoot);
    if (problems.length) throw new ConfigError(problems, source);
    return parsed.data;
}

/** Rules that span sections: pools name existing providers, placements name catalog keys, ports agree with cloud-init. */
export function crossCheck(cfg: EgressConfig, projectRoot: string): ConfigProblem[] {
    const problems: ConfigProblem[] = [];
    const names = new Set<string>();
    cfg.pools.forEach((pool, i) => {
        const at = (...p: (string | number)[]) => configPath(["pools", i, ...p]);
        if (names.has(pool.name)) problems.push({ path: at("name"), rule: "duplicates another pool's name", value: pool.name });
        names.add(pool.name);
        const entry = cfg.providers[pool.provider];
        if (!entry) {
            const known = Object.keys(cfg.providers).join(", ") || "none";
            problems.push({ path: at("provider"), rule: `must name an entry of egress:providers (known: ${known})`, value: pool.provider });
            return;
        }
        // A public address without credentials is an open proxy to anyone inside the source ranges.
        if (entry.type === "gcp" && !pool.auth)
            problems.push({
                path: at("auth"),
                rule: `is required for gcp pools (their proxies have public addresses): set \`auth.username\` and \`auth.password\`, the password as a secret, e.g. pulumi config set --secret --path 'egress:pools[${i}].auth.password' "$(openssl rand -base64 24)"`,
            });
        problems.push(...checkPlacement(entry, pool.placement, at("placement")));
        pool.members.forEach((m, j) => {
            if (m.placement) problems.push(...checkPlacement(entry, { ...pool.placement, ...m.placement }, at("members", j, "placement")));
        });
        problems.push(...checkPorts(pool, projectRoot, at));
    });
    return problems;
}

function checkPlacement(entry: ProviderConfig, placement: PoolConfig["placement"], at: string): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    if (entry.type === "kvm") {
        const zones = entry.hosts.map((h) => h.zone ?? h.name);
        if (placement.zone && !zones.includes(placement.zone))
            out.push({ path: `${at}.zone`, rule: `must be the zone of a host of this provider (${zones.join(", ")})`, value: placement.zone });
        const images = Object.keys(entry.images);
        if (!placement.image && images.length !== 1)
            out.push({ path: `${at}.image`, rule: `is required when the provider has ${images.length} images (${images.join(", ")})` });
        if (placement.image && !images.includes(placement.image))
            out.push({ path: `${at}.image`, rule: `must name an image of this provider (${images.join(", ")})`, value: placement.image });
        const types = Object.keys(entry.machineTypes);
        if (placement.machineType && !types.includes(placement.machineType))
            out.push({ path: `${at}.machineType`, rule: `must name a machine type of this provider (${types.join(", ")})`, value: placement.machineType });
    }
    if (entry.type === "gcp" && placement.zone && !entry.zones.includes(placement.zone))
        out.push({ path: `${at}.zone`, rule: `must be one of this provider's zones (${entry.zones.join(", ")})`, value: placement.zone });
    // GCE takes image and machine type from the provider entry; Kubernetes pods have neither.
    if ((entry.type === "gcp" || entry.type === "kubernetes") && placement.image)
        out.push({ path: `${at}.image`, rule: `is not used by ${entry.type} providers (set \`image\` on the provider entry)`, value: placement.image });
    if (entry.type === "kubernetes" && placement.machineType)
        out.push({ path: `${at}.machineType`, rule: "is not used by kubernetes providers (set `resources` on the provider entry)", value: placement.machineType });
    return out;
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
        if (text === undefined) out.push({ path: where, rule: "cloud-init user-data must be UTF-8 text or gzip of it (cloud-init reads nothing else)", value: ci.file });
        return text;
    };
    const listed = (ports: number[]) => [...new Set(ports)].join(", ");
    const shared = pool.cloudInit ? read(pool.cloudInit, at("cloudInit", pool.cloudInit.file ? "file" : "inline")) : undefined;
    const sharedPorts = shared ? squidHttpPorts(shared) : [];
    if (sharedPorts.length && !sharedPorts.includes(pool.port))
        out.push({ path: at("port"), rule: `must match the squid http_port ${listed(sharedPorts)} set by the pool's cloud-init`, value: pool.port });
    pool.members.forEach((m, j) => {
        const text = m.cloudInit ? read(m.cloudInit, at("members", j, "cloudInit")) : shared;
        const declared = m.port ?? pool.port;
        const set = text ? squidHttpPorts(text) : [];
        if (set.length && !set.includes(declared))
            out.push({ path: at("members", j, "port"), rule: `must be ${set.length > 1 ? "one of " : ""}${listed(set)}: member ${m.index}'s cloud-init sets squid http_port ${listed(set)}`, value: declared });
    });
    return out;
}
