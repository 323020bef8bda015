import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import type { KubernetesProviderConfig } from "./config";
import { immutableLabels, memberLabels, poolLabels } from "../../src/model";
import { MemberArgs, memberIdentity, ProxyMemberComponent } from "../shared/member";
import { SQUID_CONF_PATH, SQUID_PASSWD_PATH } from "../shared/squid";
import { PASSWD_KEY } from "./squid-config";
import type { KubernetesPoolShared } from "./shared";

/** Arguments of a PodProxy: the common member arguments with a `kubernetes` provider entry. */
export type PodProxyArgs = MemberArgs<KubernetesProviderConfig, KubernetesPoolShared>;

/** Pod template annotation holding the config hash: a changed config changes the template, which rolls the pod. */
export const CONFIG_HASH_ANNOTATION = "egress.dev/config-sha256";

/**
 * One proxy as a single-replica Deployment plus its own Service.
 *
 * Why a Deployment of one per member rather than one Deployment (or StatefulSet) of N: a member is an
 * individually leased proxy with its own address, health state and possibly its own port and config.
 * Several replicas behind one Service would let the cluster pick a pod per connection, so a lease would
 * not pin one proxy. A Deployment (not a bare Pod) still gets rescheduled when its node dies and rolls
 * to a new config without a gap (maxSurge 1, maxUnavailable 0).
 */
export class PodProxy extends ProxyMemberComponent {
    public readonly deployment: k8s.apps.v1.Deployment;
    public readonly service: k8s.core.v1.Service;

    constructor(name: string, args: PodProxyArgs, opts?: pulumi.ComponentResourceOptions) {
        super(
            "egress:kubernetes:PodProxy",
            name,
            memberIdentity(args, args.plan.placement.zone ?? args.entry.context ?? "kubernetes"),
            opts,
        );
        // Config validation (src/config/load.ts) refuses placement.image and placement.machineType here.
        const { entry, plan, shared } = args;
        // The layout covers every planned member: the pool built it from the same plans.
        const { key, hash } = shared.layout.mounts.get(plan.index)!;

        const labels = memberLabels(args.context, args.pool, plan.name);
        // What selects the member's pods: the installation is in it, so a same-named stack of another
        // installation in this namespace never selects (or spreads against) our pods.
        const podLabels = immutableLabels(args.context.installation, labels);
        const child = { parent: this, provider: shared.provider };
        const port = plan.port;
        const preferOtherNodes = {
            matchLabels: immutableLabels(args.context.installation, poolLabels(args.context, args.pool)),
        };

        this.deployment = new k8s.apps.v1.Deployment(
            name,
            {
                metadata: { namespace: shared.namespace, labels },
                spec: {
                    replicas: 1,
                    selector: { matchLabels: podLabels },
                    strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
                    template: {
                        metadata: { labels: podLabels, annotations: { [CONFIG_HASH_ANNOTATION]: hash } },
                        spec: {
                            // Soft spreading: members of a pool prefer different nodes (different egress IPs on most
                            // clusters) but still schedule on a one-node cluster.
                            topologySpreadConstraints: [
                                {
                                    maxSkew: 1,
                                    topologyKey: "kubernetes.io/hostname",
                                    whenUnsatisfiable: "ScheduleAnyway",
                                    labelSelector: preferOtherNodes,
                                },
                            ],
                            affinity: {
                                podAntiAffinity: {
                                    preferredDuringSchedulingIgnoredDuringExecution: [
                                        {
                                            weight: 100,
                                            podAffinityTerm: {
                                                topologyKey: "kubernetes.io/hostname",
                                                labelSelector: preferOtherNodes,
                                            },
                                        },
                                    ],
                                },
                            },
                            nodeSelector: plan.placement.zone
                                ? { "topology.kubernetes.io/zone": plan.placement.zone }
                                : undefined,
                            containers: [
                                {
                                    name: "squid",
                                    image: entry.image,
                                    ports: [{ name: "proxy", containerPort: port, protocol: "TCP" }],
                                    // Ready once squid accepts connections: the Service (and health probes) only see ready pods.
                                    readinessProbe: {
                                        tcpSocket: { port },
                                        initialDelaySeconds: 2,
                                        periodSeconds: 5,
                                        failureThreshold: 3,
                                    },
                                    livenessProbe: {
                                        tcpSocket: { port },
                                        initialDelaySeconds: 15,
                                        periodSeconds: 20,
                                        failureThreshold: 3,
                                    },
                                    resources: {
                                        requests: { cpu: entry.resources.cpu, memory: entry.resources.memory },
                                        limits: { cpu: entry.resources.cpuLimit, memory: entry.resources.memoryLimit },
                                    },
                                    volumeMounts: [
                                        {
                                            name: "config",
                                            mountPath: SQUID_CONF_PATH,
                                            subPath: "squid.conf",
                                            readOnly: true,
                                        },
                                        ...(shared.auth
                                            ? [
                                                  {
                                                      name: "config",
                                                      mountPath: SQUID_PASSWD_PATH,
                                                      subPath: PASSWD_KEY,
                                                      readOnly: true,
                                                  },
                                              ]
                                            : []),
                                    ],
                                },
                            ],
                            volumes: [
                                {
                                    name: "config",
                                    secret: {
                                        secretName: shared.secret.metadata.name,
                                        items: [
                                            { key, path: "squid.conf" },
                                            ...(shared.auth ? [{ key: PASSWD_KEY, path: PASSWD_KEY }] : []),
                                        ],
                                    },
                                },
                            ],
                        },
                    },
                },
            },
            child,
        );

        const external = entry.serviceType !== "ClusterIP";
        this.service = new k8s.core.v1.Service(
            name,
            {
                metadata: { namespace: shared.namespace, labels },
                spec: {
                    type: entry.serviceType,
                    selector: podLabels,
                    ports: [{ name: "proxy", port, targetPort: port, protocol: "TCP" }],
                    // Local keeps the client's source address: with Cluster, outside clients would arrive SNATed to a
                    // node IP, which squid's in-cluster ACL admits — an open proxy.
                    externalTrafficPolicy: external ? "Local" : undefined,
                    loadBalancerSourceRanges:
                        entry.serviceType === "LoadBalancer" ? entry.allowedSourceRanges : undefined,
                },
            },
            { ...child, dependsOn: [this.deployment] },
        );

        const dnsName = pulumi.interpolate`${this.service.metadata.name}.${shared.namespace}.svc.${entry.clusterDomain}`;
        const host =
            entry.serviceType === "LoadBalancer"
                ? pulumi
                      .all([this.service.status, dnsName])
                      .apply(
                          ([st, dns]) =>
                              st?.loadBalancer?.ingress?.[0]?.ip ?? st?.loadBalancer?.ingress?.[0]?.hostname ?? dns,
                      )
                : dnsName;
        this.publish(args, host, port, plan.placement.zone ?? entry.context ?? "kubernetes");
    }
}
