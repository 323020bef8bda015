/**
 * Kind `gcp`: Compute Engine instances with an external IP, one per member, made from the pool's instance
 * templates and kept in state as one egress member resource each (member-provider.ts). Everything the kind is, for
 * the registry; heavy parts (@pulumi/gcp, the REST client) load on use.
 */
import { defineKind } from "../kind";
import { eachPlacement } from "../shared/placement";
import { checkGcpAuth, checkGcpPlacement, gcpProviderSchema } from "./config";

export const gcpKind = defineKind({
    type: "gcp",
    schema: gcpProviderSchema,
    // A shard stack makes its pool's provider and templates anew, named apart; the firewall stays the
    // installation stack's (components/gcp/shared.ts).
    shardable: true,
    checkPool: (entry, pool, at) => [
        ...checkGcpAuth(pool, at),
        ...eachPlacement(pool, at, (p, where) => checkGcpPlacement(entry, p, where)),
    ],
    dynamicProviders: () => {
        const { GCP_MEMBER_TYPE, gcpMemberProvider } =
            require("./member-provider") as typeof import("./member-provider");
        return { [GCP_MEMBER_TYPE]: gcpMemberProvider };
    },
    handOver: () => (require("./hand-over") as typeof import("./hand-over")).gcpHandOvers,
    // A scale or heal after a config edit needs the new content's template first (src/engine/shared-targets.ts).
    memberDependencyTypes: ["gcp:compute/instanceTemplate:InstanceTemplate"],
    components: () => (require("./component") as typeof import("./component")).gcpComponents,
    checker: (name, entry, _env, options) =>
        (require("./health") as typeof import("./health")).gcpChecker(name, entry, options),
    goneCheck: (ctx) => (require("./gone") as typeof import("./gone")).gcpGoneCheck(ctx),
    collector: (name, entry) => (require("./gc") as typeof import("./gc")).gcpCollector(name, entry),
    doctor: (_entries, env) => [
        (require("../shared/doctor") as typeof import("../shared/doctor")).pluginFinding("gcp", env),
    ],
});
