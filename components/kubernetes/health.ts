import type { KubernetesProviderConfig } from "./config";
import { KubeApiError, KubeClient, KubeClientOptions, labelSelector } from "./api";
import { kubeconfigFieldPath, KubeconfigError } from "./kubeconfig";
import type { Checker, CheckerFactory, CheckVerdict } from "../kind";

/**
 * One verdict for the entry's namespace (`namespace/<ns>`), in stages: `kubeconfig` (context and
 * credentials resolve), `api` (GET /version answers), then listing at most one managed pod in the namespace
 * (`limit=1`, label selector), which proves the credentials (`credentials` on 401) and RBAC (`rbac` on 403).
 * Before that, the namespace must exist (`namespace`; readable by the user, or a 403 that skips this). Options: the common
 * CheckerOptions plus where the kubeconfig is read from.
 */
export function kubernetesChecker(
    providerName: string,
    entry: KubernetesProviderConfig,
    options: KubeClientOptions = {},
): Checker {
    const target = `namespace/${entry.namespace}`;
    const who = `provider \`${providerName}\``;
    return {
        provider: providerName,
        kind: "kubernetes",
        async check(signal): Promise<CheckVerdict[]> {
            let client: KubeClient;
            try {
                client = KubeClient.forEntry(entry, options);
            } catch (e) {
                const field =
                    e instanceof KubeconfigError && e.field ? ` (${kubeconfigFieldPath(providerName, e.field)})` : "";
                return [{ target, ok: false, stage: "kubeconfig", message: `${who}${field}: ${(e as Error).message}` }];
            }
            const where = `context ${client.context}, ${client.server}`;
            let version: any;
            try {
                version = await client.get("/version", {}, signal);
            } catch (e) {
                return [fail(target, e, `${who} (${where}): the API server did not answer /version`)];
            }
            // Listing pods in a namespace that does not exist answers 200 with no items, so ask for the
            // namespace itself. A user whose Role does not cover reading it (403) goes on to the pod list.
            try {
                await client.get(`/api/v1/namespaces/${entry.namespace}`, {}, signal);
            } catch (e) {
                if (e instanceof KubeApiError && e.stage === "not-found")
                    return [
                        {
                            target,
                            ok: false,
                            stage: "namespace",
                            message: `${who} (${where}): namespace ${entry.namespace} does not exist; create it (kubectl create namespace ${entry.namespace}): egress does not own namespaces`,
                        },
                    ];
                if (!(e instanceof KubeApiError && e.stage === "rbac"))
                    return [fail(target, e, `${who} (${where}): cannot read namespace ${entry.namespace}`)];
            }
            try {
                const pods: any = await client.get(
                    `/api/v1/namespaces/${entry.namespace}/pods`,
                    { limit: 1, labelSelector: labelSelector({ "egress-project": "egress" }) },
                    signal,
                );
                return [
                    {
                        target,
                        ok: true,
                        message: `${who}: ${where} answers and pods in namespace ${entry.namespace} can be listed`,
                        details: {
                            context: client.context,
                            serverVersion: version?.gitVersion,
                            managedPodsSeen: (pods.items ?? []).length,
                        },
                    },
                ];
            } catch (e) {
                return [fail(target, e, `${who} (${where}): cannot list pods in namespace ${entry.namespace}`)];
            }
        },
    };
}

/** `kubernetesChecker` is a CheckerFactory; this line keeps it one. */
const _kubernetesCheckerFactory: CheckerFactory<KubernetesProviderConfig> = kubernetesChecker;

function fail(target: string, e: unknown, prefix: string): CheckVerdict {
    if (e instanceof KubeconfigError)
        return { target, ok: false, stage: "kubeconfig", message: `${prefix}: ${e.message}` };
    const stage = e instanceof KubeApiError ? e.stage : "api";
    const todo: Record<string, string> = {
        credentials: "the credentials were rejected (401): refresh the kubeconfig's token or certificate",
        quota: "a ResourceQuota in the namespace is exhausted (403 exceeded quota): raise it or free resources",
        rbac: "forbidden (403): grant the user a Role allowing get/list/create/patch/delete on deployments, services, secrets and configmaps, and list on pods, in the namespace",
        "not-found": "not found (404): check the server URL and namespace",
        api: "retry later or check the server URL and network",
    };
    return { target, ok: false, stage, message: `${prefix}; ${todo[stage] ?? todo.api}: ${(e as Error).message}` };
}
