/**
 * What a Kubernetes member runs with. A pod has no cloud-init, so the pool's cloud-init (gunzipped when
 * gzip, as cloud-init would) is read for the squid.conf it would write (`write_files` entry ending in `squid.conf`); without one, squid gets a
 * generated config. Pure functions: tested directly and used at plan time.
 */
import { createHash } from "node:crypto";
import YAML from "yaml";
import { readCloudInitText } from "../../src/model/cloud-init";
import type { MemberPlan } from "../../src/model";
import { squidBaseConf } from "../shared/squid";

/** Pod ranges of common clusters, plus the CGNAT range some CNIs use. */
const IN_CLUSTER = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"];

/**
 * squid.conf for members without a squid.conf in their cloud-init: listens on `port`, answers in-cluster
 * clients and `allowedSourceRanges` only; with `auth`, only those that present the pool's credentials too.
 */
export function defaultSquidConf(port: number, allowedSourceRanges: readonly string[] = [], auth = false): string {
    return [
        // With auth, squid reads the passwd file the pool's Secret mounts at SQUID_PASSWD_PATH.
        ...squidBaseConf(port, [...IN_CLUSTER, ...allowedSourceRanges], auth ? {} : undefined),
        // Logs to the container's stdout/stderr, where `kubectl logs` finds them.
        "access_log stdio:/dev/stdout",
        "cache_log stdio:/dev/stderr",
        "",
    ].join("\n");
}

/** The content of the first `write_files` entry whose path ends in `squid.conf`, decoded; undefined if none. */
export function squidConfFromCloudInit(userData: string): string | undefined {
    let doc: any;
    try {
        doc = YAML.parse(userData);
    } catch (e) {
        throw new Error(`cloud-init is not valid YAML: ${(e as Error).message}`);
    }
    const files: any[] = Array.isArray(doc?.write_files) ? doc.write_files : [];
    const f = files.find((w) => typeof w?.path === "string" && /(^|\/)squid\.conf$/.test(w.path));
    if (!f) return undefined;
    const content = String(f.content ?? "");
    const enc = String(f.encoding ?? "").toLowerCase();
    if (enc === "b64" || enc === "base64") return Buffer.from(content, "base64").toString("utf8");
    if (enc !== "" && enc !== "text/plain")
        throw new Error(`squid.conf in cloud-init uses encoding \`${enc}\`; use plain text or b64`);
    return content;
}

/** The squid.conf a member runs with; given the pool itself, what a member without overrides runs with. */
export function memberSquidConf(
    plan: Pick<MemberPlan, "port" | "cloudInit" | "auth">,
    projectRoot: string,
    allowedSourceRanges?: readonly string[],
): string {
    const fromCloudInit = plan.cloudInit
        ? squidConfFromCloudInit(readCloudInitText(plan.cloudInit, projectRoot))
        : undefined;
    return fromCloudInit ?? defaultSquidConf(plan.port, allowedSourceRanges, !!plan.auth);
}

/** Layout of a pool's config Secret: one key per distinct squid.conf, and which key each member mounts. */
export interface SecretLayout {
    /** Secret data: `squid.conf` for the pool's shared config, `member-<i>.squid.conf` for members that differ. */
    data: Record<string, string>;
    /**
     * Member index → the key it mounts and the sha256 of that config; the pod template carries the hash so a
     * change rolls the pod.
     */
    mounts: Map<number, { key: string; hash: string }>;
    /** What a member with the pool's shared config mounts: `squid.conf` and its hash. */
    shared: { key: string; hash: string };
}

const SHARED_KEY = "squid.conf";
/** Secret key of the pool's squid passwd file (hashes only), mounted at SQUID_PASSWD_PATH when the pool has `auth`. */
export const PASSWD_KEY = "egress.passwd";
const memberKey = (index: number) => `member-${index}.squid.conf`;

/**
 * Puts the shared config under `squid.conf` (also when no member uses it yet, so scale-ups find it) and
 * only members whose config differs (a port or cloud-init override) under their own key.
 */
export function secretLayout(
    plans: readonly MemberPlan[],
    shared: string,
    confOf: (p: MemberPlan) => string,
    passwd?: string,
): SecretLayout {
    const data: Record<string, string> = {
        [SHARED_KEY]: shared,
        ...(passwd !== undefined ? { [PASSWD_KEY]: passwd } : {}),
    };
    const mounts: SecretLayout["mounts"] = new Map();
    // The passwd file is part of the hash: a subPath mount never sees a changed Secret, so new credentials roll the pod.
    const hashOf = (conf: string) =>
        createHash("sha256")
            .update(conf)
            .update(passwd ?? "")
            .digest("hex");
    for (const p of plans) {
        const conf = confOf(p);
        const key = conf === shared ? SHARED_KEY : memberKey(p.index);
        data[key] = conf;
        mounts.set(p.index, { key, hash: hashOf(conf) });
    }
    return { data, mounts, shared: { key: SHARED_KEY, hash: hashOf(shared) } };
}
