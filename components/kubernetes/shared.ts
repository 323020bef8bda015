import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import { planMembers, poolLabels } from "../../src/model";
import type { KubernetesProviderConfig } from "./config";
import type { PoolSharedArgs } from "../kind";
import { memberSquidConf, secretLayout, SecretLayout } from "./squid-config";
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
}

/**
 * Creates the pool's provider and its config Secret. The Secret holds the pool's squid.conf under
 * `squid.conf` and a `member-<i>.squid.conf` key for each member whose port or cloud-init differs.
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
    return { provider, namespace: entry.namespace, secret, layout, auth: !!pool.auth };
}
