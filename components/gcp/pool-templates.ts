/**
 * A pool's instance templates: what its members share (machine type, boot disk, user-data, tags, labels,
 * scheduling) kept once per distinct content, as GCE's own instance templates, where the gcp provider's
 * Instance kept it in every member's state. Members are made from them (member-provider.ts). All that a
 * pool may need are created with the pool, whatever its replica count: a scale is a targeted `up` of the
 * members it adds, which could not create a template they depend on (the kind's memberDependencyTypes).
 * A template's name carries the digest of its content: new content is a new template, and its members
 * are replaced (templates cannot change in place). A shard stack makes its own (`…-s<k>-…`): each stack
 * owns what its members depend on, so a change or a removal of one stack never touches another's.
 */
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import * as gcp from "@pulumi/gcp";
import { encodeUserData, readCloudInit } from "../../src/model/cloud-init";
import {
    immutableLabels,
    poolLabels,
    possiblePlans,
    shardOfIndex,
    type MemberPlan,
    type StackContext,
} from "../../src/model";
import type { PoolSharedArgs } from "../kind";
import { memberPasswd } from "../shared/squid-passwd";
import type { GcpProviderConfig } from "./config";
import { poolResourceName, regionOf } from "./names";
import { defaultCloudInit } from "./squid-config";

/** Whose templates: a pool of a provider entry in a stack. */
export interface TemplateOwner {
    entry: GcpProviderConfig;
    pool: string;
    context: StackContext;
    provider: gcp.Provider;
    networkTag: string;
    /** The shard stack making them (1 and up): its templates are its own, named apart. Unset: the installation's stack. */
    shard?: number;
}

/** The member's zone: the first zone is the default so a pool without placement lands in one predictable place. */
export function gcpZone(entry: GcpProviderConfig, plan: MemberPlan): string {
    return plan.placement.zone ?? entry.zones[0];
}

/** Exactly what cloud-init on the guest reads as user-data (base64 when binary, e.g. gzip). */
function userDataOf(owner: TemplateOwner, plan: MemberPlan) {
    return encodeUserData(
        plan.cloudInit
            ? readCloudInit(plan.cloudInit, owner.context.projectRoot)
            : Buffer.from(
                  defaultCloudInit(
                      plan.port,
                      owner.entry.allowedSourceRanges,
                      memberPasswd(plan.auth, owner.context, owner.pool),
                  ),
              ),
    );
}

/** The template's content: everything of a member that is not its own. */
function templateContent(owner: TemplateOwner, plan: MemberPlan) {
    const { entry, context } = owner;
    const labels = poolLabels(context, owner.pool);
    const userData = userDataOf(owner, plan);
    return {
        machineType: plan.placement.machineType ?? entry.machineType,
        disks: [
            {
                boot: true,
                autoDelete: true,
                sourceImage: entry.image,
                diskSizeGb: entry.diskSizeGb,
                diskType: "pd-standard",
                labels: immutableLabels(context.installation, labels),
            },
        ],
        // A subnetwork is regional: a template that names one is its region's (templateFor keys it so).
        networkInterfaces: [
            {
                network: entry.network,
                ...(entry.subnetwork ? { subnetwork: entry.subnetwork } : {}),
                // An empty access config asks GCE for an ephemeral external IP.
                accessConfigs: [{}],
            },
        ],
        ...(entry.subnetwork ? { region: regionOf(gcpZone(entry, plan)) } : {}),
        metadata: {
            "user-data": userData.userData,
            ...(userData.encoding ? { "user-data-encoding": userData.encoding } : {}),
        },
        tags: [owner.networkTag],
        labels,
        scheduling: entry.spot
            ? {
                  provisioningModel: "SPOT",
                  preemptible: true,
                  automaticRestart: false,
                  instanceTerminationAction: "STOP",
              }
            : { provisioningModel: "STANDARD", automaticRestart: true, onHostMaintenance: "MIGRATE" },
        // No service account: a proxy needs no Google API access.
    };
}

/**
 * The template a member of `plan` is made from, made on first use: its name (known to the program, so
 * previews show it) and its resource, which the member depends on.
 */
export function templateFor(
    templates: Map<string, gcp.compute.InstanceTemplate>,
    owner: TemplateOwner,
    plan: MemberPlan,
    opts: pulumi.ComponentResourceOptions,
): { name: string; resource: gcp.compute.InstanceTemplate } {
    const content = templateContent(owner, plan);
    const digest = createHash("sha256").update(JSON.stringify(content)).digest("hex").slice(0, 8);
    const name = poolResourceName(owner.context, owner.pool, `t${digest}${owner.shard ? `-s${owner.shard}` : ""}`);
    if (!templates.has(name)) {
        const { metadata, ...rest } = content;
        const tpl = new gcp.compute.InstanceTemplate(
            name,
            {
                ...rest,
                name,
                description: `egress members of pool ${owner.pool}`,
                // Cloud-init may carry credentials (proxy users, keys): kept encrypted in state.
                metadata: pulumi.secret(metadata),
            },
            { ...opts, provider: owner.provider },
        );
        templates.set(name, tpl);
    }
    return { name, resource: templates.get(name)! };
}

/**
 * Every template the pool's members in this stack may need: one per possible member shape (possiblePlans),
 * in a shard only those of its own members' range (and the default shape).
 */
export function createPoolTemplates(
    templates: Map<string, gcp.compute.InstanceTemplate>,
    owner: TemplateOwner,
    args: PoolSharedArgs<GcpProviderConfig>,
    opts: pulumi.ComponentResourceOptions,
): void {
    const [first, ...overridden] = possiblePlans(args.pool);
    const size = args.pool.membersPerStack;
    const here = (index: number) => !size || shardOfIndex(index, size) === (args.shard ?? 0);
    for (const plan of [first, ...overridden.filter((p) => here(p.index))]) templateFor(templates, owner, plan, opts);
}
