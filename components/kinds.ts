import * as pulumi from "@pulumi/pulumi";
import type { PoolConfig, ProviderConfig, ProviderKind } from "../src/config";
import type { MemberArgs, ProxyMemberComponent, StackContext } from "./member";
import { LocalProxy, LOCAL_PROCESS_TYPE, undoLocalCreate } from "./local";
import { kvmKind } from "./kvm";
import { gcpKind } from "./gcp";
import { kubernetesKind } from "./kubernetes";

/** Arguments for resources one pool shares across its members (a firewall, a config Secret). */
export interface PoolSharedArgs<E extends ProviderConfig = ProviderConfig, P = unknown> {
    pool: PoolConfig;
    providerName: string;
    entry: E;
    context: StackContext;
    /** What `createProviderShared` returned for this pool's provider entry, if the kind has that hook. */
    providerShared?: P;
}

/** Arguments for resources every pool of one provider entry shares (KVM base images). */
export interface ProviderSharedArgs<E extends ProviderConfig = ProviderConfig> {
    providerName: string;
    entry: E;
    /** The pools that use this entry, in config order (at least one). */
    pools: PoolConfig[];
    context: StackContext;
}

/**
 * Undoes a create that a killed engine run started but never recorded (a pending create in state),
 * finding what it made by its deterministic name in `inputs`. Returns a line per thing removed.
 */
export type PendingCreateUndo = (inputs: Record<string, unknown>) => Promise<string[]>;

/**
 * How a provider kind plugs into ProxyPool. Each folder under components/ exports one of these;
 * ProxyPool never looks at a kind's details.
 */
export interface ProviderKindModule<E extends ProviderConfig = ProviderConfig, S = unknown, P = unknown> {
    /**
     * Creates resources shared by every pool of one provider entry, once per entry for the whole program
     * (called by src/program.ts); the result reaches `createPoolShared` as `args.providerShared`.
     */
    createProviderShared?(name: string, args: ProviderSharedArgs<E>, opts: pulumi.ComponentResourceOptions): P;
    /** Creates per-pool resources shared by the members; the result is handed to every member. */
    createPoolShared?(name: string, args: PoolSharedArgs<E, P>, opts: pulumi.ComponentResourceOptions): S;
    /**
     * Creates one member. `shared` is what `createPoolShared` returned for the member's pool: ProxyPool always
     * calls it when the kind has it (a kind without it leaves `S` unknown and gets undefined).
     */
    createMember(name: string, args: MemberArgs<E>, shared: S, opts: pulumi.ComponentResourceOptions): ProxyMemberComponent;
    /** Crash recovery, by resource type token: how to undo a pending create of that type. */
    undoPendingCreate?: Record<string, PendingCreateUndo>;
}

const local: ProviderKindModule<Extract<ProviderConfig, { type: "local" }>> = {
    createMember: (name, args, _shared, opts) => new LocalProxy(name, args, opts),
    undoPendingCreate: { [LOCAL_PROCESS_TYPE]: undoLocalCreate },
};

export const kinds: Record<ProviderKind, ProviderKindModule<any, any, any>> = {
    local,
    kvm: kvmKind,
    gcp: gcpKind,
    kubernetes: kubernetesKind,
};

/** Every kind's pending-create undo, by resource type token (crash recovery in src/engine). */
export function pendingCreateUndoers(): Record<string, PendingCreateUndo> {
    return Object.assign({}, ...Object.values(kinds).map((k) => k.undoPendingCreate ?? {}));
}
