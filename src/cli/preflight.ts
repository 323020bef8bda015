import { ConfigProblem } from "../model";
import { ConfigError, EgressConfig } from "../config";
import { kindOf } from "../../components/registry";

/**
 * Checks that need this machine's files, run before an engine operation so mistakes surface as config
 * errors naming the path (exit 2) instead of mid-update (e.g. a Kubernetes entry's `context` must exist
 * in its kubeconfig). Each kind has its own (components/<kind>/index.ts `preflight`).
 */
export function preflight(cfg: EgressConfig): void {
    const problems: ConfigProblem[] = [];
    for (const [name, entry] of Object.entries(cfg.providers))
        problems.push(...(kindOf(entry).preflight?.(name, entry) ?? []));
    if (problems.length) throw new ConfigError(problems);
}
