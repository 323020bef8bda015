import * as pulumi from "@pulumi/pulumi";
import * as gcp from "@pulumi/gcp";
import { encodeUserData, EncodedUserData, readCloudInit } from "../../src/model/cloud-init";
import type { GcpProviderConfig } from "./config";
import { immutableLabels, memberLabels } from "../../src/model";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import { regionOf } from "./names";
import { defaultCloudInit } from "./squid-config";
import { memberPasswd } from "../shared/squid-passwd";
import type { GcpPoolShared } from "./shared";

/** Arguments of a GcpProxy: the common member arguments with a `gcp` provider entry. */
export type GcpProxyArgs = MemberArgs<GcpProviderConfig, GcpPoolShared>;

/** The settings of one member's instance, after defaults and overrides. */
interface GcpMemberSpec {
    zone: string;
    machineType: string;
    image: string;
    /** Exactly what cloud-init on the guest reads as user-data (base64 when binary, e.g. gzip). */
    userData: EncodedUserData;
}

/** The member's zone: the first zone is the default so a pool without placement lands in one predictable place. */
function gcpZone(args: GcpProxyArgs): string {
    return args.plan.placement.zone ?? args.entry.zones[0];
}

/**
 * Resolves where and how a member runs. Placements GCE cannot honour (a zone the entry does not list,
 * `placement.image`) never get here: config validation (src/config/load.ts) refuses them.
 */
function gcpMemberSpec(args: GcpProxyArgs): GcpMemberSpec {
    const { entry, plan } = args;
    const zone = gcpZone(args);
    const userData = encodeUserData(
        plan.cloudInit
            ? readCloudInit(plan.cloudInit, args.context.projectRoot)
            : Buffer.from(
                  defaultCloudInit(
                      plan.port,
                      entry.allowedSourceRanges,
                      memberPasswd(plan.auth, args.context, args.pool),
                  ),
              ),
    );
    return { zone, machineType: plan.placement.machineType ?? entry.machineType, image: entry.image, userData };
}

/**
 * One proxy on a Compute Engine instance with an external IPv4 address. The instance runs the member's
 * cloud-init (the `user-data` metadata key) byte for byte; the pool's firewall admits the allowed ranges.
 */
export class GcpProxy extends ProxyMemberComponent {
    /** The instance. */
    public readonly instance: gcp.compute.Instance;
    /** The reserved address, when the entry sets `staticAddress`. */
    public readonly address?: gcp.compute.Address;

    constructor(name: string, args: GcpProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        super("egress:gcp:GcpProxy", name, memberIdentity(args, gcpZone(args)), opts);
        const spec = gcpMemberSpec(args);
        const { entry } = args;
        const labels = memberLabels(args.context, args.pool, args.plan.name);
        const shared = args.shared;
        const child = { parent: this, provider: shared.provider };

        if (entry.staticAddress) {
            this.address = new gcp.compute.Address(
                `${name}-ip`,
                {
                    region: regionOf(spec.zone),
                    addressType: "EXTERNAL",
                    labels,
                },
                child,
            );
        }

        this.instance = new gcp.compute.Instance(
            `${name}-vm`,
            {
                zone: spec.zone,
                machineType: spec.machineType,
                // A boot disk's labels cannot change in place: a pre-identity stack keeps them as they were.
                bootDisk: {
                    initializeParams: {
                        image: spec.image,
                        size: entry.diskSizeGb,
                        type: "pd-standard",
                        labels: immutableLabels(args.context.installation, labels),
                    },
                },
                networkInterfaces: [
                    {
                        network: entry.network,
                        subnetwork: entry.subnetwork,
                        // An empty access config asks GCE for an ephemeral external IP.
                        accessConfigs: [this.address ? { natIp: this.address.address } : {}],
                    },
                ],
                // Cloud-init may carry credentials (proxy users, keys): keep it encrypted in state.
                // Metadata values are strings: binary user-data (gzip) goes as base64 with `user-data-encoding`,
                // which cloud-init's GCE datasource decodes before it gunzips.
                metadata: {
                    "user-data": pulumi.secret(spec.userData.userData),
                    ...(spec.userData.encoding ? { "user-data-encoding": spec.userData.encoding } : {}),
                },
                tags: [shared.networkTag],
                labels,
                scheduling: entry.spot
                    ? {
                          provisioningModel: "SPOT",
                          preemptible: true,
                          automaticRestart: false,
                          instanceTerminationAction: "STOP",
                      }
                    : { provisioningModel: "STANDARD", automaticRestart: true, onHostMaintenance: "MIGRATE" },
                // Changing the machine type needs a stop; a proxy member can take a short outage.
                allowStoppingForUpdate: true,
                // No service account: a proxy needs no Google API access.
            },
            child,
        );

        const host = this.address
            ? this.address.address
            : this.instance.networkInterfaces.apply((nics) => nics?.[0]?.accessConfigs?.[0]?.natIp ?? "");
        // The region is what a GCE zone says beyond itself (`_region_europe-west1` in a gateway username).
        this.publish(args, host, args.plan.port, spec.zone, "http", { region: regionOf(spec.zone) });
    }
}
