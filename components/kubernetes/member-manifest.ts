/**
 * What one Kubernetes member is, as objects: a Deployment of one pod and its Service, built from its
 * pool's template (kept in the pool's members ConfigMap) and the member's own part (its member resource's inputs,
 * member-provider.ts). Pure: no cluster, no Pulumi.
 * The objects are the ones the release before the member provider made through @pulumi/kubernetes, field
 * for field, so a member adopted from such a stack keeps its pod (the template is unchanged).
 */
import { createHash } from "node:crypto";
import { INSTALLATION_LABEL } from "../../src/model/installation";
import { MEMBER_LABEL, memberLabelValue } from "../../src/model/member";
import { SQUID_CONF_PATH, SQUID_PASSWD_PATH } from "../shared/squid";
import { PASSWD_KEY } from "./squid-config";

/** Pod template annotation holding the config hash: a changed config changes the template, which rolls the pod. */
export const CONFIG_HASH_ANNOTATION = "egress.dev/config-sha256";

/** The key of the pool's members ConfigMap (shared.ts) that holds its MemberTemplate as JSON. */
export const MEMBER_TEMPLATE_KEY = "member.json";

/** Everything one member is: its pool's template with its own part applied (specOf). */
export interface MemberSpec {
    namespace: string;
    /** The member's labels (src/model memberLabels): the objects carry them. */
    labels: Record<string, string>;
    /**
     * Set for a stack made before installation ids: selectors and pod templates leave the installation
     * label out, as they did then (src/model immutableLabels), so nothing rolls.
     */
    legacyInstallation?: boolean;
    image: string;
    port: number;
    /** Container requests and limits. */
    resources: { cpu: string; memory: string; cpuLimit: string; memoryLimit: string };
    /** A node selector on `topology.kubernetes.io/zone`. */
    zone?: string;
    /** The pool's config Secret, the key this member mounts as squid.conf and that key's content hash. */
    secret: string;
    key: string;
    hash: string;
    /** The Secret holds the pool's passwd file, which the member mounts. */
    auth?: boolean;
    serviceType: "ClusterIP" | "NodePort" | "LoadBalancer";
    /** A LoadBalancer Service's `loadBalancerSourceRanges`. */
    ranges?: string[];
}

/**
 * What a pool's members share, kept once per pool in its members ConfigMap (shared.ts) rather than once per
 * member in state (issue 33): `labels` are the pool's, `key`/`hash` what a member with the pool's own
 * squid.conf mounts.
 */
export type MemberTemplate = Omit<MemberSpec, "zone">;

/**
 * A member's own part, which its member resource keeps in state: its name, its pool's members ConfigMap
 * (`<namespace>/<name>`: a new template has a new name) and only what differs from the template.
 */
export interface MemberRef {
    name: string;
    tpl: string;
    port?: number;
    key?: string;
    hash?: string;
    zone?: string;
}

/** The first 16 hex digits of the sha256 of `v` as JSON. */
export function digestOf(v: unknown): string {
    return createHash("sha256").update(JSON.stringify(v)).digest("hex").slice(0, 16);
}

/** The member's full spec: the template, its own part, and its `egress-member` label. */
export function specOf(template: MemberTemplate, ref: MemberRef): MemberSpec {
    const { port, key, hash, zone } = ref;
    return {
        ...template,
        labels: { ...template.labels, [MEMBER_LABEL]: memberLabelValue({ id: ref.name }) },
        ...(port !== undefined ? { port } : {}),
        ...(key !== undefined ? { key } : {}),
        ...(hash !== undefined ? { hash } : {}),
        ...(zone !== undefined ? { zone } : {}),
    };
}

/** Labels of the member's pods: its Deployment's selector, its Service's selector. */
export function podLabels(spec: MemberSpec): Record<string, string> {
    if (!spec.legacyInstallation) return spec.labels;
    const { [INSTALLATION_LABEL]: _, ...rest } = spec.labels;
    return rest;
}

/** The pool's pods, which members prefer not to share a node with. */
function poolPodLabels(spec: MemberSpec): Record<string, string> {
    const { [MEMBER_LABEL]: _, ...rest } = podLabels(spec);
    return rest;
}

/** The member's pod template: squid with its config (and passwd) from the pool's Secret. */
function podTemplate(spec: MemberSpec): object {
    const { port } = spec;
    const preferOtherNodes = { matchLabels: poolPodLabels(spec) };
    const mount = (subPath: string, mountPath: string) => ({ name: "config", mountPath, subPath, readOnly: true });
    return {
        metadata: { labels: podLabels(spec), annotations: { [CONFIG_HASH_ANNOTATION]: spec.hash } },
        spec: {
            // Soft spreading: members of a pool prefer different nodes (different egress IPs on most clusters)
            // but still schedule on a one-node cluster.
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
                            podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: preferOtherNodes },
                        },
                    ],
                },
            },
            ...(spec.zone ? { nodeSelector: { "topology.kubernetes.io/zone": spec.zone } } : {}),
            containers: [
                {
                    name: "squid",
                    image: spec.image,
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
                        requests: { cpu: spec.resources.cpu, memory: spec.resources.memory },
                        limits: { cpu: spec.resources.cpuLimit, memory: spec.resources.memoryLimit },
                    },
                    volumeMounts: [
                        mount("squid.conf", SQUID_CONF_PATH),
                        ...(spec.auth ? [mount(PASSWD_KEY, SQUID_PASSWD_PATH)] : []),
                    ],
                },
            ],
            volumes: [
                {
                    name: "config",
                    secret: {
                        secretName: spec.secret,
                        items: [
                            { key: spec.key, path: "squid.conf" },
                            ...(spec.auth ? [{ key: PASSWD_KEY, path: PASSWD_KEY }] : []),
                        ],
                    },
                },
            ],
        },
    };
}

/**
 * The member's Deployment of one. Why a Deployment of one per member rather than one Deployment (or
 * StatefulSet) of N: a member is an individually leased proxy with its own address, health state and
 * possibly its own port and config. Several replicas behind one Service would let the cluster pick a pod
 * per connection, so a lease would not pin one proxy. A Deployment (not a bare Pod) still gets
 * rescheduled when its node dies and rolls to a new config without a gap (maxSurge 1, maxUnavailable 0).
 */
export function deploymentOf(spec: MemberSpec, name: string): object {
    return {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name, namespace: spec.namespace, labels: spec.labels },
        spec: {
            replicas: 1,
            selector: { matchLabels: podLabels(spec) },
            strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
            template: podTemplate(spec),
        },
    };
}

/** The member's own Service, selecting its pod. */
export function serviceOf(spec: MemberSpec, name: string): object {
    const external = spec.serviceType !== "ClusterIP";
    return {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: spec.namespace, labels: spec.labels },
        spec: {
            type: spec.serviceType,
            selector: podLabels(spec),
            ports: [{ name: "proxy", port: spec.port, targetPort: spec.port, protocol: "TCP" }],
            // Local keeps the client's source address: with Cluster, outside clients would arrive SNATed to a
            // node IP, which squid's in-cluster ACL admits — an open proxy.
            ...(external ? { externalTrafficPolicy: "Local" } : {}),
            ...(spec.serviceType === "LoadBalancer" && spec.ranges ? { loadBalancerSourceRanges: spec.ranges } : {}),
        },
    };
}

/** The API paths of the member's objects. */
export function memberPaths(namespace: string, name: string): { deployment: string; service: string } {
    const ns = encodeURIComponent(namespace);
    const n = encodeURIComponent(name);
    return {
        deployment: `/apis/apps/v1/namespaces/${ns}/deployments/${n}`,
        service: `/api/v1/namespaces/${ns}/services/${n}`,
    };
}
