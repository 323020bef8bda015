import * as path from "node:path";
import type { KvmProviderConfig, ProviderConfig, ProviderKind } from "../config";
import type { ProxyMember } from "../../components/member";
import { runningProxies } from "../../components/local/process";
import { NO_RETRY } from "../../components/retry";
import { GONE_STATES, listDomainStates, DomainState, withLibvirt } from "../../components/kvm/libvirt";
import { connectionFor, memberObjectNames, privateKeyText } from "../../components/kvm/naming";
import { gcpGoneCheck } from "./gone-gcp";
import { kubernetesGoneCheck } from "./gone-kubernetes";

/**
 * "Is this member gone?" per kind, for the service's reconcile loop: a cheap look at what really runs,
 * without an engine run. Answers member id → why it is gone, in words; members not in the map are
 * there as far as the hook can tell (their health still comes from probes). Never throws for a member:
 * a hook that cannot tell says nothing about it.
 */
export type GoneCheck = (members: readonly ProxyMember[], signal?: AbortSignal) => Promise<Map<string, string>>;

export interface GoneCheckContext {
    /** The service's run dir (local proxies keep their files under `<runDir>/local/<stack>`). */
    runDir: string;
    /** The Pulumi project (libvirt object names and GCE/Kubernetes labels carry it). */
    project: string;
    stack: string;
    /** The provider entry, decrypted (secret fields are plain strings: never log them). */
    entry: ProviderConfig;
}

/**
 * Kinds with a hook: every kind has one (local, kvm here; gcp in gone-gcp.ts, kubernetes in
 * gone-kubernetes.ts). A kind without one would be repaired only after staying unhealthy for its pool's
 * `replaceUnhealthyAfterSeconds`. The service builds hooks with default client options (credentials and
 * endpoints from the entry and the environment), as it does the provider checkers.
 */
const hooks: Partial<Record<ProviderKind, (ctx: GoneCheckContext) => GoneCheck>> = {
    local: localGoneCheck,
    kvm: kvmGoneCheck,
    gcp: (ctx) => gcpGoneCheck(ctx),
    kubernetes: (ctx) => kubernetesGoneCheck(ctx),
};

export function goneCheckFor(ctx: GoneCheckContext): GoneCheck | undefined {
    return hooks[ctx.entry.type]?.(ctx);
}

/**
 * Local: a member is gone when no process in this stack's state dir carries its proxy id in its argv
 * (components/local/process.ts starts it with `--id <stack>-<member> --ready <stateDir>/<id>.json`).
 * One scan of /proc per round, whatever the member count.
 */
export function localGoneCheck(ctx: Pick<GoneCheckContext, "runDir" | "stack">): GoneCheck {
    const stateDir = path.join(ctx.runDir, "local", ctx.stack);
    return async (members) => {
        const running = runningProxies(stateDir);
        const gone = new Map<string, string>();
        for (const m of members) {
            const id = `${ctx.stack}-${m.id}`;
            if (!running.has(id)) gone.set(m.id, `no process of local proxy ${id} is running`);
        }
        return gone;
    };
}

/**
 * KVM: one `virsh list --all` per host of the entry (over the same verified SSH as the engine uses). A
 * member is gone when its domain is shut off, crashed, paused or suspended on a host, or defined on none
 * of them while every host answered. A host that does not answer says nothing about any member (its
 * guests may run fine; the provider check reports the host).
 */
export function kvmGoneCheck(ctx: GoneCheckContext): GoneCheck {
    const entry = ctx.entry as KvmProviderConfig;
    return async (members, signal) => {
        let key: string | undefined;
        try {
            key = privateKeyText(entry);
        } catch {
            return new Map();
        }
        const perHost = await Promise.all(entry.hosts.map(async (host) => {
            if (signal?.aborted) return undefined;
            try {
                return { host: host.name, states: await withLibvirt(connectionFor(entry, host), key, (virsh) => listDomainStates(virsh), { retry: NO_RETRY }) };
            } catch {
                return undefined;
            }
        }));
        const answered = perHost.filter((h): h is { host: string; states: Map<string, DomainState> } => !!h);
        const gone = new Map<string, string>();
        for (const m of members) {
            const domain = memberObjectNames(ctx.project, ctx.stack, m.id).domain;
            const found = answered.find((h) => h.states.has(domain));
            if (found) {
                const state = found.states.get(domain)!;
                if (GONE_STATES.includes(state)) gone.set(m.id, `domain ${domain} is ${state} on ${found.host}`);
            } else if (answered.length === perHost.length) {
                gone.set(m.id, `domain ${domain} is not defined on any host of provider ${m.provider}`);
            }
        }
        return gone;
    };
}
