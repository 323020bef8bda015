import * as fs from "node:fs";
import * as path from "node:path";
import { memberOfState, type MemberIdentity, type ProxyMember } from "../model";
import type { StateResource } from "./state";

/** Pulumi project name of every egress stack (Pulumi.yaml `name`). */
export const PROJECT = "egress";

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
    const resources = checkpointResources(backendDir, stack);
    return resources && rootProxies(resources);
}

/**
 * The root stack resource's output `proxies` among a deployment's resources: `[]` with no root or no such
 * output yet; undefined when it is not a plain list (a secret), which only the engine can read.
 */
export function rootProxies(resources: readonly StateResource[]): ProxyMember[] | undefined {
    const root = resources.find((r) => r.type === "pulumi:pulumi:Stack");
    const proxies = root?.outputs?.proxies;
    if (proxies === undefined) return [];
    return Array.isArray(proxies) ? (proxies as ProxyMember[]) : undefined;
}

/** A root stack output that state holds in the clear (a string), e.g. `appliedConfig`; undefined otherwise. */
export function rootOutput(resources: readonly StateResource[], name: string): string | undefined {
    const value = resources.find((r) => r.type === "pulumi:pulumi:Stack")?.outputs?.[name];
    return typeof value === "string" ? value : undefined;
}

/**
 * The members state holds (each member component's outputs, see recovery.ts membersOf) straight from
 * the checkpoint file: right after an interrupted or failed update too, and during one. Undefined when
 * the file cannot be read this way; the caller then asks the engine.
 */
export function checkpointMembers(backendDir: string | undefined, stack: string): ProxyMember[] | undefined {
    const resources = backendDir ? checkpointResources(backendDir, stack) : undefined;
    return resources && membersOf(resources);
}

/** What egress reads of a stack's latest deployment, from a checkpoint file or an export alike. */
export interface Deployment {
    resources?: StateResource[];
    pending_operations?: { type: string; resource: StateResource }[];
}

/**
 * The stack's latest deployment from a file backend's checkpoint file: the fast path (no CLI start).
 * `{}` when the stack has no checkpoint; undefined when it cannot be read this way (compressed by
 * PULUMI_DIY_BACKEND_GZIP/ZSTD, or written while we read): the caller then asks the engine.
 */
export function fileCheckpoint(backendDir: string, stack: string): Deployment | undefined {
    const base = path.join(checkpointDir(backendDir), `${stack}.json`);
    let text: string;
    try {
        text = fs.readFileSync(base, "utf8");
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
        return fs.existsSync(`${base}.gz`) || fs.existsSync(`${base}.zst`) ? undefined : {};
    }
    try {
        return (JSON.parse(text)?.checkpoint?.latest ?? {}) as Deployment;
    } catch {
        return undefined; // written while we read (not atomic on every filesystem): the engine's answer is exact
    }
}

/** The resources of the stack's checkpoint file; undefined when it cannot be read this way (no file, compressed). */
export function checkpointResources(backendDir: string, stack: string): StateResource[] | undefined {
    const dep = fs.existsSync(path.join(checkpointDir(backendDir), `${stack}.json`))
        ? fileCheckpoint(backendDir, stack)
        : undefined;
    return dep && (dep.resources ?? []);
}

/**
 * Members of a checkpoint's resources, ordered by pool and index: each member component's `member`
 * output; for a component whose update was cut short before that output was recorded, its identity
 * input plus the address its created child reports (`host`/`port`, or a KVM domain's `ipAddress`).
 * A component with no created child has started nothing, and is left out.
 */
export function membersOf(resources: StateResource[]): ProxyMember[] {
    const byId = new Map<string, ProxyMember>();
    const children = new Map<string, StateResource[]>();
    for (const r of resources)
        if (r.parent && !r.delete) children.set(r.parent, [...(children.get(r.parent) ?? []), r]);
    for (const r of resources) {
        if (r.delete) continue;
        const recorded = r.outputs?.member as Partial<ProxyMember> | undefined;
        const m = recorded
            ? memberOfState(r.inputs?.identity as MemberIdentity | undefined, recorded)
            : fromIdentity(r, children.get(r.urn) ?? []);
        if (m && typeof m === "object" && typeof m.id === "string") byId.set(m.id, m);
    }
    return [...byId.values()].sort((a, b) => a.pool.localeCompare(b.pool) || a.index - b.index);
}

function fromIdentity(r: StateResource, children: StateResource[]): ProxyMember | undefined {
    const identity = r.inputs?.identity as Omit<ProxyMember, "host" | "url"> | undefined;
    const created = children.filter((c) => c.id);
    if (!identity || !created.length) return undefined;
    const withAddress = created.find((c) => typeof (c.outputs?.host ?? c.outputs?.ipAddress) === "string");
    const host = (withAddress?.outputs?.host ?? withAddress?.outputs?.ipAddress ?? "") as string;
    const port = typeof withAddress?.outputs?.port === "number" ? (withAddress.outputs.port as number) : identity.port;
    return { ...identity, host, port, url: host ? `http://${host}:${port}` : "" };
}

/** Pending operations the stack's checkpoint file lists; undefined when it cannot tell (no file backend, unreadable). */
export function checkpointPendingCount(backendDir: string | undefined, stack: string): number | undefined {
    const dep = backendDir ? fileCheckpoint(backendDir, stack) : undefined;
    return dep && (dep.pending_operations ?? []).length;
}
