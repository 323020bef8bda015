/**
 * Kind `kvm`: libvirt hosts reached over SSH. Everything the kind is, for the registry; heavy parts
 * (libvirt tooling, Pulumi resources) load on use.
 */
import { defineKind } from "../kind";
import { eachPlacement } from "../shared/placement";
import { checkKvmPlacement, kvmProviderSchema } from "./config";

export const kvmKind = defineKind({
    type: "kvm",
    schema: kvmProviderSchema,
    checkPool: (entry, pool, at) => eachPlacement(pool, at, (p, where) => checkKvmPlacement(entry, p, where)),
    components: () => (require("./component") as typeof import("./component")).kvmComponents,
    pendingCreateUndo: () => (require("./recover") as typeof import("./recover")).kvmPendingCreateUndo,
    dynamicProviders: () =>
        (require("./dynamic-providers") as typeof import("./dynamic-providers")).kvmDynamicProviders(),
    checker: (name, entry, _env, options) =>
        (require("./health") as typeof import("./health")).kvmChecker(name, entry, options),
    goneCheck: (ctx) => (require("./gone") as typeof import("./gone")).kvmGoneCheck(ctx),
    collector: (name, entry) => (require("./gc") as typeof import("./gc")).kvmCollector(name, entry),
    // Member templates: a new config makes new ones, which a heal, scale or rolling batch may need first.
    memberDependencyTypes: ["pulumi-nodejs:dynamic/egress:kvm:Template"],
    handOver: () => (require("./hand-over") as typeof import("./hand-over")).kvmHandOvers,
    doctor: () => (require("./doctor") as typeof import("./doctor")).kvmDoctor(),
});
