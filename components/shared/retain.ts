import * as pulumi from "@pulumi/pulumi";
import type { EntryBase } from "../kind";

/**
 * Marks every resource created under a component as `retainOnDelete`. Pulumi does not pass that option
 * from parent to child, but it does pass transformations, so one on the pool (or the entry's shared
 * group) reaches every child whatever the kind builds. Provider resources are left alone: deleting one
 * touches nothing outside state.
 */
const retain: pulumi.ResourceTransformation = (a) =>
    a.type.startsWith("pulumi:providers:") ? undefined : { props: a.props, opts: { ...a.opts, retainOnDelete: true } };

/** `opts` plus, when the provider entry sets `retainOnDelete`, the transformation that applies it to every child. */
export function withEntryOptions<O extends pulumi.ResourceOptions>(entry: EntryBase, opts: O = {} as O): O {
    if (!entry.retainOnDelete) return opts;
    return { ...opts, transformations: [...(opts.transformations ?? []), retain] };
}
