/**
 * Kind `kubernetes`: one proxy Deployment and Service per member, in one namespace, kept in state as one
 * egress member resource (member-provider.ts). Everything the kind
 * is, for the registry; heavy parts (@pulumi/kubernetes, the REST client) load on use.
 */
import { defineKind } from "../kind";
import { eachPlacement } from "../shared/placement";
import { checkKubernetesPlacement, kubernetesProviderSchema } from "./config";

export const kubernetesKind = defineKind({
    type: "kubernetes",
    schema: kubernetesProviderSchema,
    // A pool's provider and config Secret are named by the engine: a shard stack makes its own (issue 33).
    shardable: true,
    checkPool: (_entry, pool, at) => eachPlacement(pool, at, checkKubernetesPlacement),
    preflight: (name, entry) =>
        (require("./preflight") as typeof import("./preflight")).kubernetesPreflight(name, entry),
    dynamicProviders: () => {
        const { KUBE_MEMBER_TYPE, kubeMemberProvider } =
            require("./member-provider") as typeof import("./member-provider");
        return { [KUBE_MEMBER_TYPE]: kubeMemberProvider };
    },
    handOver: () => (require("./hand-over") as typeof import("./hand-over")).kubernetesHandOvers,
    components: () => (require("./component") as typeof import("./component")).kubernetesComponents,
    checker: (name, entry, _env, options) =>
        (require("./health") as typeof import("./health")).kubernetesChecker(name, entry, options),
    goneCheck: (ctx) => (require("./gone") as typeof import("./gone")).kubernetesGoneCheck(ctx),
    collector: (name, entry) => (require("./gc") as typeof import("./gc")).kubernetesCollector(name, entry),
    doctor: (_entries, env) => [
        (require("../shared/doctor") as typeof import("../shared/doctor")).pluginFinding("kubernetes", env),
    ],
});
