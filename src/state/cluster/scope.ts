import { createHash } from "node:crypto";
import * as fs from "node:fs";
import YAML from "yaml";
import { loadStackConfig, stackFile } from "../../config";
import type { StateBackend } from "../../engine";
import { kindOf } from "../../../components/registry";

/**
 * What the replicas of one stack must have in common to join each other (Cluster.assertOneHome), kept
 * in the stack's home key of the store:
 * - `config:<hash>` when the stack can be driven from several hosts: its Pulumi state is on a shared
 *   backend (PostgreSQL, an object store, Pulumi Cloud) and no pool's members are processes of one host.
 *   Replicas from any EGRESS_HOME join if their stack files' `config` agree on everything but the pools'
 *   replica counts (the leader takes those from the store: cluster/desired.ts).
 * - this home's id otherwise (`oneHome` says why): the stack's replicas share one EGRESS_HOME on one host.
 */
export interface ReplicaScope {
    id: string;
    /** Why the replicas must run from this one home; undefined when hosts may differ. */
    oneHome?: string;
}

/** `oneHome` of a stack file that cannot be read (or is being rewritten): callers may keep the last scope. */
export const UNREADABLE = "its stack file cannot be read";

export function replicaScope(o: {
    projectRoot: string;
    stack: string;
    homeId: string;
    backend: StateBackend;
}): ReplicaScope {
    const home = (why: string): ReplicaScope => ({ id: o.homeId, oneHome: why });
    if (o.backend.kind === "file")
        return home(
            "its Pulumi state is the file backend of this EGRESS_HOME (a shared backend, such as PULUMI_BACKEND_URL=postgres://…, lets replicas run on several hosts)",
        );
    let doc: Record<string, unknown>;
    try {
        const cfg = loadStackConfig(o.projectRoot, o.stack);
        const onHost = cfg.pools.filter((p) => {
            const entry = cfg.providers[p.provider];
            return entry && kindOf(entry).onThisMachine;
        });
        if (onHost.length)
            return home(
                `its pool(s) ${onHost.map((p) => `"${p.name}"`).join(", ")} run members that are processes of one host (provider kind ${onHost
                    .map((p) => cfg.providers[p.provider].type)
                    .filter((t, i, a) => a.indexOf(t) === i)
                    .join(", ")})`,
            );
        doc = YAML.parse(fs.readFileSync(stackFile(o.projectRoot, o.stack), "utf8")) ?? {};
    } catch {
        // The start reports the unreadable stack file itself; until then nothing proves it can be shared.
        return home(UNREADABLE);
    }
    return { id: `config:${configFingerprint(doc, o.backend.shown)}` };
}

/**
 * The scope read anew at each call (each heartbeat: an operator may edit the stack file), except that a
 * stack file that cannot be read for a moment (being rewritten) keeps the scope read last.
 */
export function scopeReader(o: Parameters<typeof replicaScope>[0]): () => ReplicaScope {
    let last: ReplicaScope | undefined;
    return () => {
        const now = replicaScope(o);
        if (now.oneHome === UNREADABLE && last) return last;
        return (last = now);
    };
}

/** `lock`, refused with the drift's reason while there is one (the scaler's writer lock, home.ts driftReason). */
export function refusingDrift<A extends unknown[], R>(
    drift: () => string | undefined,
    lock: (...a: A) => Promise<R>,
): (...a: A) => Promise<R> {
    return async (...a) => {
        const why = drift();
        if (why) throw new Error(why);
        return lock(...a);
    };
}

/**
 * A hash of a stack file's `config` without the pools' replica counts, and of the backend (without its
 * password): two homes whose stack files differ in anything a leader applies get different ones. The
 * secrets settings beside `config` (`encryptionsalt`, …) are left out: the engine writes the salt into
 * the file when it creates the stack, after the first replica took its scope, and checks it itself (a
 * home with another one fails its engine runs with a passphrase error that says so).
 */
export function configFingerprint(doc: Record<string, unknown>, backendShown: string): string {
    const config = { ...((doc.config as Record<string, unknown>) ?? {}) };
    const pools = config["egress:pools"];
    if (Array.isArray(pools))
        config["egress:pools"] = pools.map((p) => {
            if (!p || typeof p !== "object") return p;
            const { replicas: _replicas, ...rest } = p as Record<string, unknown>;
            return rest;
        });
    const text = canonical({ config, backend: backendShown });
    return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** JSON with object keys sorted at every depth, so key order in the YAML does not count. */
function canonical(v: unknown): string {
    if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
    if (v && typeof v === "object")
        return `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
            .join(",")}}`;
    return JSON.stringify(v) ?? "null";
}
