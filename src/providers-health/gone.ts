import * as path from "node:path";
import type { ProviderKind } from "../config";
import type { ProxyMember } from "../../components/member";
import { runningProxies } from "../../components/local/process";

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
    stack: string;
}

/**
 * Kinds with a hook. A kind without one is repaired only after staying unhealthy for its pool's
 * `replaceUnhealthyAfterSeconds`. KVM (domain state), GCE (instance status) and Kubernetes (pod
 * missing) add theirs here.
 */
const hooks: Partial<Record<ProviderKind, (ctx: GoneCheckContext) => GoneCheck>> = {
    local: localGoneCheck,
};

export function goneCheckFor(kind: ProviderKind, ctx: GoneCheckContext): GoneCheck | undefined {
    return hooks[kind]?.(ctx);
}

/**
 * Local: a member is gone when no process in this stack's state dir carries its proxy id in its argv
 * (components/local/process.ts starts it with `--id <stack>-<member> --ready <stateDir>/<id>.json`).
 * One scan of /proc per round, whatever the member count.
 */
export function localGoneCheck(ctx: GoneCheckContext): GoneCheck {
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
