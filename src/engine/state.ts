/**
 * The one home of what egress reads in Pulumi state: the shape of a checkpoint's resource, and the rule
 * for "which resources are member X". Pure; the checkpoint reader, repair targets, forget and recovery
 * all use it, so they agree on every member, including one whose update was cut short.
 */

/** What a checkpoint (or a stack export) records about one resource: the fields egress reads or edits. */
export interface StateResource {
    urn: string;
    type: string;
    id?: string;
    parent?: string;
    provider?: string;
    delete?: boolean;
    custom?: boolean;
    dependencies?: string[];
    propertyDependencies?: Record<string, string[]>;
    deletedWith?: string;
    inputs?: Record<string, unknown>;
    outputs?: Record<string, unknown>;
    /** When the engine created the resource (RFC 3339; state v3 from engines since 3.9x, absent in older state). */
    created?: string;
}

/** The pool component's type token (components/pool.ts); its direct children are the members. */
export const POOL_TYPE = "egress:index:ProxyPool";

/** Last segment of a URN: the resource's logical name. */
export function urnName(urn: string): string {
    return urn.split("::").pop() ?? urn;
}

/** The resource's own type in a URN (`…::parent$…$type::name` → `type`). */
export function urnType(urn: string): string | undefined {
    return urn.split("::")[2]?.split("$").pop();
}

/**
 * Member components: live direct children of a ProxyPool, each named by its member id (`<pool>-<index>`).
 * Structure, not outputs: a member whose update was cut short before its `member` output was recorded is
 * one too.
 */
export function memberComponents(resources: readonly StateResource[]): StateResource[] {
    return resources.filter((r) => !r.delete && !r.custom && r.parent !== undefined && urnType(r.parent) === POOL_TYPE);
}
