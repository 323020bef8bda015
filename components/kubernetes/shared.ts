import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import { planMembers, poolLabels } from "../../src/model";
import type { KubernetesProviderConfig } from "./config";
import type { PoolSharedArgs } from "../kind";
import { memberSquidConf, secretLayout, SecretLayout } from "./squid-config";
import { MEMBER_TEMPLATE_KEY, MemberTemplate } from "./member-manifest";
import { memberPasswd } from "../shared/squid-passwd";

/** What a pool hands to each of its Kubernetes members. */
export interface KubernetesPoolShared {
    /** Explicit provider bound to the entry's kubeconfig, context and namespace. */
    provider: k8s.Provider;
    namespace: string;
    /** The pool's config Secret. */
    secret: k8s.core.v1.Secret;
    /** Which Secret key each member mounts, and the hash of its content. */
    layout: SecretLayout;
    /** True when the pool has `auth`: the Secret holds its passwd file, which members mount. */
    auth: boolean;
    /** What the pool's members share (MemberTemplate under MEMBER_TEMPLATE_KEY). */
    members: k8s.core.v1.ConfigMap;
    /** The pool's port: the template's, which a member with its own port overrides. */
    port: number;
}

/**
 * Creates the pool's provider, its config Secret and the ConfigMap of what its members share. The Secret
 * holds the pool's squid.conf under `squid.conf` and a `member-<i>.squid.conf` key for each member whose
 * port or cloud-init differs.
 */
export function createKubernetesPoolShared(
    name: string,
    args: PoolSharedArgs<KubernetesProviderConfig>,
    opts: pulumi.ComponentResourceOptions,
): KubernetesPoolShared {
    const { entry, pool, context } = args;
    const provider = new k8s.Provider(
        `${name}-k8s`,
        {
            // Unset kubeconfig: the provider reads $KUBECONFIG or ~/.kube/config, like kubectl.
            kubeconfig: entry.kubeconfigPath,
            context: entry.context,
            namespace: entry.namespace,
        },
        opts,
    );
    const ranges = entry.serviceType === "LoadBalancer" ? entry.allowedSourceRanges : undefined;
    const confOf = (p: Parameters<typeof memberSquidConf>[0]) => memberSquidConf(p, context.projectRoot, ranges);
    // The pool's own config: what a member without overrides runs with.
    const layout = secretLayout(planMembers(pool), confOf(pool), confOf, memberPasswd(pool.auth, context, pool.name));
    const secret = new k8s.core.v1.Secret(
        `${name}-config`,
        {
            metadata: { namespace: entry.namespace, labels: poolLabels(context, pool.name) },
            type: "Opaque",
            stringData: layout.data,
        },
        { ...opts, provider },
    );
    // A ConfigMap of its own, not a key of the Secret: the provider replaces either on a change of its data,
    // and a replaced Secret has a new name, which every pod mounts (a roll). The ConfigMap's name changes
    // with the template (replaced on any change, whatever PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE says), so a
    // member's reference to it is also the template's digest: a new template updates every member.
    const members = new k8s.core.v1.ConfigMap(
        `${name}-members`,
        {
            metadata: { namespace: entry.namespace, labels: poolLabels(context, pool.name) },
            data: {
                [MEMBER_TEMPLATE_KEY]: pulumi
                    .output(secret.metadata.name)
                    .apply((s) => JSON.stringify(memberTemplate(args, layout, s))),
            },
        },
        { ...opts, provider, replaceOnChanges: ["*"] },
    );
    return {
        provider,
        namespace: entry.namespace,
        secret,
        members,
        layout,
        auth: !!pool.auth,
        port: pool.port,
    };
}

/** What the pool's members share: all of a member's spec but its name and what it overrides. */
function memberTemplate(
    args: PoolSharedArgs<KubernetesProviderConfig>,
    layout: SecretLayout,
    secret: string,
): MemberTemplate {
    const { entry, pool, context } = args;
    return {
        namespace: entry.namespace,
        secret,
        labels: poolLabels(context, pool.name),
        ...(context.installation.legacy ? { legacyInstallation: true } : {}),
        image: entry.image,
        port: pool.port,
        resources: entry.resources,
        key: layout.shared.key,
        hash: layout.shared.hash,
        ...(pool.auth ? { auth: true } : {}),
        serviceType: entry.serviceType,
        ...(entry.serviceType === "LoadBalancer" && entry.allowedSourceRanges
            ? { ranges: entry.allowedSourceRanges }
            : {}),
    };
}
