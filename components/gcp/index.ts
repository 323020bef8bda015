/**
 * Kind `gcp`: Compute Engine instances with an external IP, one per member. Everything the kind is, for
 * the registry; heavy parts (@pulumi/gcp, the REST client) load on use.
 */
import { defineKind } from "../kind";
import { eachPlacement } from "../shared/placement";
import { checkGcpAuth, checkGcpPlacement, gcpProviderSchema } from "./config";

export const gcpKind = defineKind({
    type: "gcp",
    schema: gcpProviderSchema,
    checkPool: (entry, pool, at) => [
        ...checkGcpAuth(pool, at),
        ...eachPlacement(pool, at, (p, where) => checkGcpPlacement(entry, p, where)),
    ],
    components: () => (require("./component") as typeof import("./component")).gcpComponents,
    checker: (name, entry, _env, options) =>
        (require("./health") as typeof import("./health")).gcpChecker(name, entry, options),
    goneCheck: (ctx) => (require("./gone") as typeof import("./gone")).gcpGoneCheck(ctx),
    collector: (name, entry) => (require("./gc") as typeof import("./gc")).gcpCollector(name, entry),
    doctor: (_entries, env) => [
        (require("../shared/doctor") as typeof import("../shared/doctor")).pluginFinding("gcp", env),
    ],
});
