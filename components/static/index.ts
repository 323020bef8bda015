/**
 * Kind `static`: bring-your-own proxies, listed by URL. Nothing to create, collect or repair: members
 * follow the list. Everything the kind is, for the registry.
 */
import { defineKind } from "../kind";
import { checkStaticPool, parseStaticProxy, staticProviderSchema } from "./config";

export const staticKind = defineKind({
    type: "static",
    schema: staticProviderSchema,
    checkPool: (_entry, pool, at, users) => checkStaticPool(pool, at, users),
    fixedReplicas: (entry) => entry.proxies.length,
    // Member i is proxies[i]; a listed proxy's own credentials (decrypted by the program) are its member's.
    memberCredentials: (entry) => entry.proxies.map((p) => parseStaticProxy(p)?.auth),
    components: () => (require("./component") as typeof import("./component")).staticComponents,
    checker: (name, entry, _env, options) =>
        (require("./health") as typeof import("./health")).staticChecker(name, entry, options),
});
