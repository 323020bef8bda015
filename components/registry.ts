/**
 * The one list of provider kinds, and the one way to a kind's hooks (checkerFor, goneCheckFor,
 * collectorFor). Config, program, probes, gc, doctor and the service read it; nothing
 * outside components/ names a kind. Adding a kind: a folder components/<kind>/ whose index.ts exports its
 * KindDefinition (docs/architecture.md), and one line here.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import type {
    Checker,
    CheckerOptions,
    Collector,
    GoneCheck,
    GoneCheckContext,
    KindDefinition,
    PendingCreateUndo,
    HandOver,
} from "./kind";
import { localKind } from "./local";
import { kvmKind } from "./kvm";
import { gcpKind } from "./gcp";
import { kubernetesKind } from "./kubernetes";
import { staticKind } from "./static";

export const KINDS = [localKind, kvmKind, gcpKind, kubernetesKind, staticKind] as const;

/** The kinds' entry schemas, as a tuple the config's discriminated union keeps the types of. */
type SchemasOf<T extends readonly unknown[]> = {
    -readonly [I in keyof T]: T[I] extends { schema: infer S } ? S : never;
};
export const KIND_SCHEMAS = KINDS.map((k) => k.schema) as unknown as SchemasOf<typeof KINDS>;

/** Kind names, in registry order (error messages list them). */
export const KIND_NAMES: readonly string[] = KINDS.map((k) => k.type);

/** A validated provider entry of any registered kind (src/config's ProviderConfig is the same union). */
export type AnyEntry = z.output<(typeof KINDS)[number]["schema"]>;

/** The definition of an entry's kind. The entry was validated, so its kind is registered. */
export function kindOf(entry: { type: string }): KindDefinition<AnyEntry, any> {
    const def = KINDS.find((k) => k.type === entry.type);
    if (!def) throw new Error(`unknown provider kind \`${entry.type}\` (known: ${KIND_NAMES.join(", ")})`);
    return def as unknown as KindDefinition<AnyEntry, any>;
}

/** Every kind's pending-create undo, by resource type token (crash recovery in src/engine). */
export function pendingCreateUndoers(): Record<string, PendingCreateUndo> {
    return Object.assign({}, ...KINDS.map((k: KindDefinition<any, any>) => k.pendingCreateUndo?.() ?? {}));
}

/** Every kind's hand-over of an earlier release's resources, by resource type token (upgrades, src/engine/hand-over.ts). */
export function handOvers(): Record<string, HandOver> {
    return Object.assign({}, ...KINDS.map((k: KindDefinition<any, any>) => k.handOver?.() ?? {}));
}

/** Every kind's memberDependencyTypes: resources a targeted `up` of members may have to create too. */
export function memberDependencyTypes(): Set<string> {
    return new Set(KINDS.flatMap((k: KindDefinition<any, any>) => [...(k.memberDependencyTypes ?? [])]));
}

/** The dynamic provider of resource type token `type`, from the kind that registers it; undefined: none does. */
export function dynamicProviderFor(type: string): pulumi.dynamic.ResourceProvider<any, any> | undefined {
    for (const k of KINDS as readonly KindDefinition<any, any>[]) {
        const found = k.dynamicProviders?.()[type];
        if (found) return found;
    }
    return undefined;
}

/**
 * The Checker for one provider entry, by kind (the service's provider checks, `egress doctor`). `runDir`
 * is where local proxies keep their files; `options.timeoutMs` is the per-target timeout
 * (`--provider-check-timeout`), `options.log` gets its debug lines (KVM: each virsh call).
 */
export function checkerFor(
    providerName: string,
    entry: AnyEntry,
    runDir: string,
    stack: string,
    options?: CheckerOptions,
): Checker {
    return kindOf(entry).checker(providerName, entry, { runDir, stack }, options);
}

/**
 * The entry's liveness hook (its kind's `goneCheck`, built with default client options: credentials and
 * endpoints from the entry and the environment, as the checkers). A kind without one is repaired only
 * after staying unhealthy for its pool's `replaceUnhealthyAfterSeconds`.
 */
export function goneCheckFor(ctx: GoneCheckContext): GoneCheck | undefined {
    return kindOf(ctx.entry).goneCheck?.(ctx as GoneCheckContext<any>);
}

/** The entry's garbage collector (`egress gc`); undefined for a kind that leaves nothing behind to collect. */
export function collectorFor(providerName: string, entry: AnyEntry, runDir: string, stack = ""): Collector | undefined {
    return kindOf(entry).collector?.(providerName, entry, { runDir, stack });
}
