import { ConfigError, ConfigProblem, EgressConfig } from "../config";
import { kubeconfigFieldPath, KubeconfigError, loadClusterAccess } from "../../components/kubernetes/kubeconfig";

/**
 * Checks that need this machine's files, run before an engine operation so mistakes surface as config
 * errors naming the path (exit 2) instead of mid-update: a Kubernetes entry's `context` must exist in
 * its kubeconfig. (The schema cannot know: kubeconfigs differ per machine.)
 */
export function preflight(cfg: EgressConfig): void {
    const problems: ConfigProblem[] = [];
    for (const [name, entry] of Object.entries(cfg.providers)) {
        if (entry.type !== "kubernetes" || (!entry.context && !entry.kubeconfigPath)) continue;
        try {
            loadClusterAccess({ kubeconfigPath: entry.kubeconfigPath, context: entry.context });
        } catch (e) {
            if (!(e instanceof KubeconfigError)) throw e;
            const field = e.field ?? "context";
            problems.push({ path: kubeconfigFieldPath(name, field), rule: e.message, value: entry[field] });
        }
    }
    if (problems.length) throw new ConfigError(problems);
}
