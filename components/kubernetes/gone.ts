import type { KubernetesProviderConfig } from "./config";
import { KubeClient, KubeClientOptions, labelSelector } from "./api";
import { stackLabels, INSTALLATION_LABEL, MEMBER_LABEL, memberLabelValue, ownedBy } from "../../src/model";
import type { GoneCheck, GoneCheckContext } from "../kind";
import { NO_RETRY } from "../shared/retry";

/** Pod phases of a pod that runs or is about to: anything else (Failed, Succeeded, Unknown) does not serve. */
const LIVE_PHASES = ["Pending", "Running"];

/**
 * Kubernetes: one list of the stack's pods in the entry's namespace (label selector = the stack labels,
 * pages followed as `egress gc` does). A member is a Deployment of one replica (pod-proxy.ts) whose pods
 * carry its `egress-member` label; it is gone when none of them is Pending or Running — no pod at all
 * (the Deployment was deleted) or only Failed/Succeeded ones (evicted, or the ReplicaSet cannot make a
 * new one). A pod that is Running but crash-looping or not ready is not gone: health probes and the pool's
 * `replaceUnhealthyAfterSeconds` judge it. An API that does not answer (or a kubeconfig that does not
 * load) says nothing about any member. Options: the endpoint and where the kubeconfig is read from, as
 * for the provider checker.
 */
export function kubernetesGoneCheck(
    ctx: GoneCheckContext<KubernetesProviderConfig>,
    options: KubeClientOptions = {},
): GoneCheck {
    const entry = ctx.entry;
    // Pods of a stack made before installation ids carry no installation label (their template is kept as
    // it was, pod-proxy.ts): select by project and stack, then keep the pods this installation owns.
    const { [INSTALLATION_LABEL]: _, ...scope } = stackLabels({
        project: ctx.project,
        stack: ctx.stack,
        installation: ctx.installation.id,
    });
    const selector = labelSelector(scope);
    const podsPath = `/api/v1/namespaces/${entry.namespace}/pods`;
    return async (members, signal) => {
        const pods: { name: string; phase: string; reason?: string; label?: string }[] = [];
        try {
            // A client per round, like the checker: exec credential plugins hand out short-lived tokens.
            const client = KubeClient.forEntry(entry, { retry: NO_RETRY, ...options });
            let cont: string | undefined;
            do {
                const page: any = await client.get(
                    podsPath,
                    { labelSelector: selector, limit: 500, continue: cont },
                    signal,
                );
                for (const p of page.items ?? [])
                    if (ownedBy(p.metadata?.labels?.[INSTALLATION_LABEL], ctx.installation))
                        pods.push({
                            name: String(p.metadata?.name),
                            phase: String(p.status?.phase ?? "Unknown"),
                            reason: p.status?.reason,
                            label: p.metadata?.labels?.[MEMBER_LABEL],
                        });
                cont = page.metadata?.continue || undefined;
            } while (cont);
        } catch {
            return new Map();
        }
        const gone = new Map<string, string>();
        for (const m of members) {
            const label = memberLabelValue(m);
            const mine = pods.filter((p) => p.label === label);
            if (mine.some((p) => LIVE_PHASES.includes(p.phase))) continue;
            const where = `labelled ${MEMBER_LABEL}=${label} in namespace ${entry.namespace}`;
            gone.set(
                m.id,
                mine.length
                    ? `no pod ${where} is Pending or Running (${mine.map((p) => `${p.name}: ${p.phase}${p.reason ? ` (${p.reason})` : ""}`).join(", ")})`
                    : `no pod ${where}`,
            );
        }
        return gone;
    };
}
