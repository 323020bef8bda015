/**
 * The way out named where a delete cannot reach its host: an unreachable or decommissioned host would
 * otherwise fail every later `up` and `destroy` of the stack. Pure and self-contained: serialized with
 * the providers that use it.
 */

/** libvirt stages at which the host itself did not answer or would not let us in (not a problem with the object). */
function hostUnreachable(e: { stage?: string; transient?: boolean }): boolean {
    return (
        e.stage === "tcp" ||
        e.stage === "timeout" ||
        e.stage === "host-key" ||
        e.stage === "ssh-auth" ||
        (e.stage === "libvirt" && e.transient === true)
    );
}

/** Adds the way out to a delete's error when its host could not be reached; other errors pass unchanged. */
export function explainUnreachableDelete(e: unknown, what: string, member: string | undefined): unknown {
    if (!(e instanceof Error) || !hostUnreachable(e as { stage?: string })) return e;
    const m = member ?? "<member>";
    e.message +=
        `\ncannot delete ${what}: its host is not reachable. If it will answer again, retry later. If it is gone for good: ` +
        `\`egress forget ${m}\` removes the member from state (what it ran stays behind; \`egress gc\` lists it), ` +
        "or set `retainOnDelete: true` on the provider entry (one `up` records it) so deletes only drop things from state.";
    return e;
}

/** Member of a per-member volume name (`egress-<8 hex>-<member>-<8 hex>.qcow2` or `...-seed.iso`). */
export function memberOfVolumeName(volume: string): string | undefined {
    return /^egress-[0-9a-f]{8}-(.+)-[0-9a-f]{8}(?:\.qcow2|-seed\.iso)$/.exec(volume)?.[1];
}
