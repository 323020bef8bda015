import type { ConfigProblem } from "../../src/model";
import type { KubernetesProviderConfig } from "./config";
import { kubeconfigFieldPath, KubeconfigError, loadClusterAccess } from "./kubeconfig";

/**
 * An entry's `context` must exist in its kubeconfig (the schema cannot know: kubeconfigs differ per
 * machine), checked before an engine operation so the mistake is a config error naming the path.
 */
export function kubernetesPreflight(name: string, entry: KubernetesProviderConfig): ConfigProblem[] {
    if (!entry.context && !entry.kubeconfigPath) return [];
    try {
        loadClusterAccess({ kubeconfigPath: entry.kubeconfigPath, context: entry.context });
        return [];
    } catch (e) {
        if (!(e instanceof KubeconfigError)) throw e;
        const field = e.field ?? "context";
        return [{ path: kubeconfigFieldPath(name, field), rule: e.message, value: entry[field] }];
    }
}
