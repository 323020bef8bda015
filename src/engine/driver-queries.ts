/**
 * The read-only side of a stack driver: what state, outputs and config say. Nothing here changes the
 * stack; members, repair targets and the installation are read through readDeployment (file fast path
 * or export, whichever the backend allows).
 */
import * as crypto from "node:crypto";
import type { ProxyMember, StackCredentials } from "../model";
import { membersOf, rootProxies } from "./checkpoint";
import { classifyBackendError } from "./engine-errors";
import { stackLocks } from "./locks";
import { countTargets, memberCreatedAt, MemberTargets, memberTargets } from "./member-urns";
import type { ResolvedInstallation } from "./installation";
import { StackSession } from "./stack-session";
import { checkpointVersion } from "./postgres-state";
import type { StateResource } from "./state";

export class StackQueries extends StackSession {
    /**
     * The members state knows (each member component's outputs), which after an interrupted or failed
     * update may differ from the stack output `proxies` of the last successful one. Not queued behind a
     * running operation: both ways of reading state work mid-update.
     */
    async membersInState(): Promise<ProxyMember[]> {
        return membersOf((await this.readDeployment()).resources ?? []);
    }

    /** The resources of the stack's latest deployment (fleet-driver.ts merges its stacks' this way). */
    async stateResources(): Promise<StateResource[]> {
        return (await this.readDeployment()).resources ?? [];
    }

    /** What a targeted repair of these members touches (member-urns.ts). */
    async memberTargets(ids: readonly string[]): Promise<MemberTargets> {
        return this.serial(async () => memberTargets((await this.readDeployment()).resources ?? [], ids));
    }

    /** The members a count change adds and removes, to target (member-urns.ts `countTargets`). */
    async countTargets(desired: Record<string, number>): Promise<string[] | undefined> {
        return this.serial(async () => countTargets((await this.readDeployment()).resources ?? [], desired));
    }

    /** Member id → epoch ms its resources were created (member-urns.ts `memberCreatedAt`): rotation by age reads it. */
    async memberCreatedAt(): Promise<Map<string, number>> {
        return this.serial(async () => memberCreatedAt((await this.readDeployment()).resources ?? []));
    }

    /**
     * A token that changes whenever the stack's checkpoint is written (the stack watch of a backend that
     * is not a directory polls it): PostgreSQL's `updated_at` of the checkpoint row (one small query),
     * else a digest of the exported deployment. Undefined for a stack without state.
     */
    async stateVersion(): Promise<string | undefined> {
        if (this.backend.kind === "postgres") {
            try {
                return await checkpointVersion(this.backend.url, this.stackName);
            } catch (e) {
                throw classifyBackendError(e, this.backend);
            }
        }
        const dep = await this.readDeployment();
        return dep.resources ? crypto.createHash("sha256").update(JSON.stringify(dep)).digest("hex") : undefined;
    }

    /**
     * The stack output `proxies` (empty before the first `up`), as state holds it in the clear: from a file
     * backend's checkpoint with no CLI start (`egress outputs` took 3 s, mostly `pulumi version` and
     * `stack select`); else from the engine.
     */
    async proxies(): Promise<ProxyMember[]> {
        return this.serial(async () => {
            // No resources may mean no stack at all (a mistyped --stack): only the engine can say which.
            const resources = (await this.readDeployment()).resources ?? [];
            const fromState = resources.length ? rootProxies(resources) : undefined;
            if (fromState) return fromState;
            const outs = await this.outputs();
            return (outs.proxies?.value as ProxyMember[] | undefined) ?? [];
        });
    }

    /**
     * The secret stack outputs `credentials` (pool → the credentials its members require) and
     * `memberCredentials` (member → its own proxy's), decrypted by the engine; empty before the first
     * `up` and for stacks without any. Never log the result.
     */
    async credentials(): Promise<StackCredentials> {
        return this.serial(async () => {
            const outs = await this.outputs();
            return {
                pools: (outs.credentials?.value as StackCredentials["pools"] | undefined) ?? {},
                members: (outs.memberCredentials?.value as StackCredentials["members"] | undefined) ?? {},
            };
        });
    }

    /**
     * The stack's installation as its state says (installation.ts): the recorded id, the legacy id of a
     * stack made before ids, or a fresh one for a stack that holds nothing (that one is only proposed: the
     * next `up` records it). gc, liveness hooks and crash undo act only on things carrying it.
     */
    async installation(): Promise<ResolvedInstallation> {
        return this.serial(() => this.readInstallation());
    }

    /** Resources in state, as `type::name` — what `destroy` must leave empty. */
    async resources(): Promise<{ type: string; name: string; id?: string }[]> {
        return this.serial(async () => {
            const res = (await this.readDeployment()).resources ?? [];
            return res.map((r) => ({ type: r.type, name: r.urn.split("::").pop()!, id: r.id }));
        });
    }

    /**
     * The stack's `egress:*` config with secrets decrypted, as `{providers, pools}` (for checkers and gc,
     * which talk to providers outside the engine). Never log the result.
     */
    async config(): Promise<{ providers?: unknown; pools?: unknown }> {
        return this.serial(async () => {
            const all = await (await this.open()).getAllConfig();
            const get = (k: string) => (all[k] ? JSON.parse(all[k].value) : undefined);
            return { providers: get("egress:providers"), pools: get("egress:pools") };
        });
    }

    /** Locks held on this stack by running updates (file backend; other backends report none). */
    liveLocks(): { pid: number; hostname: string }[] {
        return stackLocks(this.backendDir(), this.stackName).filter((l) => l.alive);
    }

    private async outputs(): Promise<Record<string, { value: unknown }>> {
        const stack = await this.open();
        try {
            return await stack.outputs();
        } catch (e) {
            throw classifyBackendError(e, this.backend);
        }
    }
}
