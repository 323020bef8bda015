/**
 * What the loaders in Pulumi state load (components/shared/dynamic.ts): the engine's dynamic-provider
 * process requires `@egress/providers` (providers/index.js, this module compiled) and asks for the
 * provider of one resource type, naming the protocol the loader was written with. A protocol this egress
 * does not speak is refused with what to do, before any method runs on state it might misread.
 */
import type * as pulumi from "@pulumi/pulumi";
import { dynamicProviderFor } from "../components/registry";
import { DYNAMIC_PREFIX, KEEPS_PROVIDER_TEXT, PROVIDER_PROTOCOL } from "../components/shared/dynamic";
import { IDENTITY_TYPE, identityProvider } from "./installation-resource";
import { PACKAGE_ROOT, packageVersion } from "./engine/env";

type AnyProvider = pulumi.dynamic.ResourceProvider<any, any>;

/**
 * The provider of `type` (a type token, with or without DYNAMIC_PREFIX: providerLoader leaves it out) for a
 * loader written with `protocol`; throws when this egress cannot serve it.
 */
export function provider(shortOrToken: string, protocol: number): AnyProvider {
    const type = shortOrToken.startsWith(DYNAMIC_PREFIX) ? shortOrToken : `${DYNAMIC_PREFIX}${shortOrToken}`;
    const here = `egress ${packageVersion()} at ${PACKAGE_ROOT}`;
    if (protocol !== PROVIDER_PROTOCOL)
        throw new Error(
            `${type}: this stack's state was written by an egress whose dynamic providers speak protocol ${protocol}; ` +
                `${here} speaks protocol ${PROVIDER_PROTOCOL} and will not run them on that state. ` +
                `Run the stack with the egress release that wrote it (or one that lists protocol ${protocol} as readable).`,
        );
    const found = type === IDENTITY_TYPE ? identityProvider : dynamicProviderFor(type);
    if (!found) throw new Error(`${type}: ${here} has no dynamic provider of this type`);
    return rewritingLoader(found);
}

/**
 * A resource whose state holds other provider text than the new inputs' (a release that stored the
 * provider's code in state, or another loader) reports a change, so the engine updates it in place and
 * its outputs take the new loader: a "same" step keeps the old outputs, and with them the old code.
 * Never a replace: the provider's own diff decides those. Providers marked KEEPS_PROVIDER_TEXT are left
 * as they are (components/shared/dynamic.ts keepingProviderText says why).
 */
function rewritingLoader(p: AnyProvider): AnyProvider {
    const diff = p.diff;
    if (!diff || (p as { [KEEPS_PROVIDER_TEXT]?: boolean })[KEEPS_PROVIDER_TEXT]) return p;
    return {
        ...p,
        async diff(id, olds, news) {
            const result = await diff.call(p, id, olds, news);
            const stale = olds?.__provider !== undefined && olds.__provider !== news?.__provider;
            return stale ? { ...result, changes: true } : result;
        },
    };
}
