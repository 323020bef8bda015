import type { Stack } from "@pulumi/pulumi/automation";
import { memberComponents, type StateResource, urnName as nameOf } from "./state";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

/** A resource of the member that leaves state; `id` is what names the real thing (a pid file, a domain, a VM). */
export interface ForgottenResource {
    urn: string;
    type: string;
    name: string;
    id?: string;
    /** A custom resource: something real that keeps existing after state forgets it. */
    real: boolean;
}

export interface ForgetResult {
    member: string;
    /** Every resource removed from state (the member component and everything under it). */
    forgotten: ForgottenResource[];
    /** The real things among them: they keep running/existing until `egress gc --delete` or a person removes them. */
    staysBehind: ForgottenResource[];
    /** False for a dry run: nothing was written. */
    applied: boolean;
}

/** No member of that name in state: nothing was changed (the CLI exits 2). */
export class MemberNotInStateError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.invalid, type: "MemberNotInStateError" };
    }
    constructor(member: string, known: string[]) {
        super(`no member "${member}" in state (members: ${known.join(", ") || "none"}); nothing was changed`);
        this.name = "MemberNotInStateError";
    }
}

/** State cannot drop the member cleanly right now (pending operations, or something outside it refers to it). */
export class ForgetRefusedError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "ForgetRefusedError" };
    }
    constructor(message: string) {
        super(message);
        this.name = "ForgetRefusedError";
    }
}

/**
 * The resources `member` consists of (its component and everything under it, by parent) and what
 * refers to them from outside, which would keep state from loading if they were dropped.
 */
export function planForget(
    resources: StateResource[],
    member: string,
): { subtree: StateResource[]; referrers: string[] } {
    const members = memberComponents(resources);
    const root = members.find((r) => nameOf(r.urn) === member);
    if (!root) throw new MemberNotInStateError(member, [...new Set(members.map((r) => nameOf(r.urn)))].sort());
    const inside = new Set([root.urn]);
    // Parents come before children in a checkpoint, but a loop until nothing is added does not rely on it.
    for (let grew = true; grew;) {
        grew = false;
        for (const r of resources) {
            if (r.parent && inside.has(r.parent) && !inside.has(r.urn)) {
                inside.add(r.urn);
                grew = true;
            }
        }
    }
    const subtree = resources.filter((r) => inside.has(r.urn));
    const refersInside = (r: StateResource) =>
        [
            ...(r.dependencies ?? []),
            ...Object.values(r.propertyDependencies ?? {}).flat(),
            r.deletedWith ?? "",
            (r.provider ?? "").replace(/::[^:]*$/, ""),
        ].some((u) => inside.has(u));
    const referrers = resources.filter((r) => !inside.has(r.urn) && refersInside(r)).map((r) => r.urn);
    return { subtree, referrers };
}

/** Drops `member` from output lists that name it (the stack's `proxies`, its pool's `members`), so nothing still advertises it. */
function dropFromOutputs(resources: StateResource[], member: string): void {
    for (const r of resources) {
        for (const key of ["proxies", "members"]) {
            const list = r.outputs?.[key];
            if (Array.isArray(list))
                r.outputs![key] = list.filter(
                    (m) => !(m && typeof m === "object" && (m as { id?: unknown }).id === member),
                );
        }
    }
}

/**
 * Removes one member's resources from state, as `pulumi state delete` would for each of them, through
 * export + import. Nothing outside state is touched: what the member ran stays behind, and `egress gc`
 * lists it since state no longer knows it. `apply: false` only reports. Callers hold the writer lock.
 */
export async function forgetMember(stack: Stack, member: string, apply: boolean): Promise<ForgetResult> {
    const exported = await stack.exportStack();
    const dep = exported.deployment as { resources?: StateResource[]; pending_operations?: unknown[] } | undefined;
    const resources = dep?.resources ?? [];
    const { subtree, referrers } = planForget(resources, member);
    if (referrers.length)
        throw new ForgetRefusedError(
            `other resources refer to member ${member}: ${referrers.join(", ")}; nothing was changed`,
        );
    // `stack import` drops pending operations; those belong to crash recovery, which any `egress up` runs first.
    if (dep?.pending_operations?.length)
        throw new ForgetRefusedError(
            `state has ${dep.pending_operations.length} pending operation(s) of an interrupted run; run \`egress refresh\` (or \`egress up\`) first, then forget; nothing was changed`,
        );
    const forgotten = subtree.map((r) => ({
        urn: r.urn,
        type: r.type,
        name: nameOf(r.urn),
        ...(r.id ? { id: r.id } : {}),
        real: r.custom === true && !r.type.startsWith("pulumi:providers:"),
    }));
    if (apply) {
        const drop = new Set(subtree.map((r) => r.urn));
        dep!.resources = resources.filter((r) => !drop.has(r.urn));
        dropFromOutputs(dep!.resources, member);
        await stack.importStack(exported);
    }
    return { member, forgotten, staysBehind: forgotten.filter((r) => r.real), applied: apply };
}
