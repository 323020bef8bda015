import type { KubernetesProviderConfig } from "./config";
import { KubeClient, KubeClientOptions, labelSelector } from "./api";
import type { Collector, CollectorFactory, ManagedThing } from "../kind";
import { stackLabels } from "../../src/model";

/** Object types egress creates, with their REST collection paths. Deployments first: removing them stops the pods. */
const TYPES: { type: string; path: (ns: string) => string }[] = [
    { type: "deployment", path: (ns) => `/apis/apps/v1/namespaces/${ns}/deployments` },
    { type: "service", path: (ns) => `/api/v1/namespaces/${ns}/services` },
    { type: "secret", path: (ns) => `/api/v1/namespaces/${ns}/secrets` },
    { type: "configmap", path: (ns) => `/api/v1/namespaces/${ns}/configmaps` },
];

/**
 * Finds and removes egress's Deployments, Services, Secrets and ConfigMaps in the entry's namespace by the
 * `egress-project`, `egress-stack` and `egress-installation` labels every one of them carries (a stack
 * made before installation ids gets the last one on its first `up` after the upgrade: an in-place label
 * update). Objects of a same-named stack of another installation do not match. Options: the endpoint plus where the
 * kubeconfig is read from.
 */
export function kubernetesCollector(
    providerName: string,
    entry: KubernetesProviderConfig,
    options: KubeClientOptions = {},
): Collector {
    // Built on first use: a bad kubeconfig should fail the gc run for this entry, not construction of all collectors.
    let client: KubeClient | undefined;
    const api = () => (client ??= KubeClient.forEntry(entry, options));
    return {
        provider: providerName,
        kind: "kubernetes",

        async list(scope) {
            // The installation label is part of the selector: another installation's objects are never listed.
            const selector = labelSelector(stackLabels(scope));
            const out: ManagedThing[] = [];
            for (const t of TYPES) {
                let cont: string | undefined;
                do {
                    const page: any = await api().get(t.path(entry.namespace), {
                        labelSelector: selector,
                        limit: 500,
                        continue: cont,
                    });
                    for (const item of page.items ?? []) {
                        const labels = item.metadata?.labels ?? {};
                        out.push({
                            kind: "kubernetes",
                            provider: providerName,
                            type: t.type,
                            name: item.metadata.name,
                            location: item.metadata.namespace ?? entry.namespace,
                            ...(labels["egress-pool"] ? { pool: labels["egress-pool"] } : {}),
                            ...(labels["egress-member"] ? { member: labels["egress-member"] } : {}),
                        });
                    }
                    cont = page.metadata?.continue || undefined;
                } while (cont);
            }
            return out;
        },

        async remove(thing) {
            const t = TYPES.find((x) => x.type === thing.type);
            if (!t) throw new Error(`kubernetes collector for \`${providerName}\` cannot remove a \`${thing.type}\``);
            // 404 (already gone) counts as removed.
            await api().delete(`${t.path(thing.location)}/${encodeURIComponent(thing.name)}`);
        },
    };
}

/** `kubernetesCollector` is a CollectorFactory; this line keeps it one. */
const _kubernetesCollectorFactory: CollectorFactory<KubernetesProviderConfig> = kubernetesCollector;
