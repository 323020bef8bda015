/**
 * Dynamic resources whose state carries no provider code (issue 33). `pulumi.dynamic.Resource` stores the
 * provider's closure, serialized by value, in the `__provider` property of every resource's inputs and
 * outputs: 15–60 KB per resource, twice. Ours store a one-line loader instead, which the engine's
 * dynamic-provider process runs like any serialized provider (`require-from-string`, then `.handler()`):
 * it loads the implementation from the installed egress by a stable package name, `@egress/providers`
 * (providers/, linked into node_modules by npm), and names the resource type and the protocol it was
 * written with. The implementation refuses a protocol it does not speak (src/dynamic-providers.ts).
 * docs/decisions/0072-no-provider-code.md says why this shape and not another.
 */
import * as pulumi from "@pulumi/pulumi";

/**
 * The contract between a loader in state and the installed implementations: their inputs, outputs and
 * behaviour. Bump it when a provider can no longer read the state an earlier one wrote; the new
 * implementation then says so instead of misreading it (and keeps accepting the older numbers it can).
 */
export const PROVIDER_PROTOCOL = 1;

/** The package every loader requires: npm links it into node_modules (package.json, `file:providers`). */
export const PROVIDERS_PACKAGE = "@egress/providers";

/** What `pulumi.dynamic.Resource` puts before `<module>:<type>` in its type tokens. */
export const DYNAMIC_PREFIX = "pulumi-nodejs:dynamic/";

/** The token `pulumi.dynamic.Resource` gives a resource of `module` and `type` (unchanged: URNs stay). */
export function dynamicType(module: string, type: string): string {
    return `${DYNAMIC_PREFIX}${module}:${type}`;
}

/**
 * The `__provider` text of a resource of type token `type`: a module whose `handler()` returns the
 * provider, as the engine expects. No path in it, so a moved checkout writes the same bytes. As short as
 * it can be read (no spaces, the token without DYNAMIC_PREFIX): state keeps it twice per resource.
 */
export function providerLoader(type: string, protocol: number = PROVIDER_PROTOCOL): string {
    const short = type.startsWith(DYNAMIC_PREFIX) ? type.slice(DYNAMIC_PREFIX.length) : type;
    return `exports.handler=()=>require(${JSON.stringify(PROVIDERS_PACKAGE)}).provider(${JSON.stringify(short)},${protocol})`;
}

/**
 * A dynamic resource with the loader as its provider: what `pulumi.dynamic.Resource` does (one token,
 * `__provider` beside the inputs), minus the closure. Its provider must be registered under the same
 * token for the engine's process to find it (the kind's `dynamicProviders`, src/dynamic-providers.ts).
 */
export abstract class LoadedDynamicResource extends pulumi.CustomResource {
    /** `token` is `dynamicType(module, type)`, the one its provider is registered under. */
    constructor(token: string, name: string, props: pulumi.Inputs, opts?: pulumi.CustomResourceOptions) {
        if ("__provider" in props) throw new Error("A dynamic resource must not define the `__provider` key");
        super(token, name, { ...props, __provider: providerLoader(token) }, opts);
    }
}

/** Marks a provider whose resources are not updated just to take a new loader (keepingProviderText). */
export const KEEPS_PROVIDER_TEXT = Symbol.for("egress.dynamic.keepsProviderText");

/**
 * `p`, marked so that a resource whose state holds older provider text is not updated only for that
 * (src/dynamic-providers.ts): for resources whose outputs other resources' replace keys read (a KVM
 * base image's path in its overlays, an overlay's in its domain). A forced update makes those outputs
 * unknown in a preview, and the preview then shows the dependents replaced although `up` would not
 * replace them. Their outputs keep the old text until their next real update; their inputs take the
 * loader at once.
 */
export function keepingProviderText<P extends object>(p: P): P {
    return Object.assign(p, { [KEEPS_PROVIDER_TEXT]: true });
}
