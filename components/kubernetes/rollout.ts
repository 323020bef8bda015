/**
 * Waiting for a member's objects as @pulumi/kubernetes did: the Deployment rolled out (its one pod of the
 * current template available, no old pod left), and a LoadBalancer Service given an address. A rollout that
 * does not finish fails with what the cluster says: the Deployment's conditions and the pods' waiting reasons.
 */
import type { KubeClient } from "./api";
import { labelSelector } from "./api";
import { MemberSpec, podLabels } from "./member-manifest";

/** How long a member may take to roll out or get its address (@pulumi/kubernetes' default: 10 min). */
export const ROLLOUT_TIMEOUT_MS = 600_000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True when the Deployment's current template runs as its one available pod and no other pod is left. */
export function rolledOut(d: any): boolean {
    const st = d?.status ?? {};
    return (
        (st.observedGeneration ?? 0) >= (d?.metadata?.generation ?? 1) &&
        st.updatedReplicas === 1 &&
        st.availableReplicas === 1 &&
        st.replicas === 1
    );
}

/** Waits for `path`'s Deployment to roll out; fails after ROLLOUT_TIMEOUT_MS naming what held it. */
export async function awaitRollout(client: KubeClient, path: string, spec: MemberSpec): Promise<void> {
    const deadline = Date.now() + ROLLOUT_TIMEOUT_MS;
    let d: any;
    for (let wait = 100; Date.now() < deadline; wait = Math.min(wait * 2, 2000)) {
        d = await client.get(path);
        if (rolledOut(d)) return;
        await pause(wait);
    }
    throw new Error(
        `Deployment ${spec.namespace}/${d?.metadata?.name} did not roll out within ${ROLLOUT_TIMEOUT_MS / 1000} s: ` +
            `${conditionsText(d)}${await podsText(client, spec)}`,
    );
}

/** A LoadBalancer Service's address (its ingress IP or hostname), once the cloud gave it one. */
export async function awaitServiceHost(client: KubeClient, path: string): Promise<string> {
    const deadline = Date.now() + ROLLOUT_TIMEOUT_MS;
    for (let wait = 250; Date.now() < deadline; wait = Math.min(wait * 2, 5000)) {
        const ingress = (await client.get(path))?.status?.loadBalancer?.ingress?.[0];
        if (ingress?.ip || ingress?.hostname) return ingress.ip ?? ingress.hostname;
        await pause(wait);
    }
    throw new Error(
        `Service ${path.split("/").pop()} got no load balancer address within ${ROLLOUT_TIMEOUT_MS / 1000} s`,
    );
}

function conditionsText(d: any): string {
    const conds = (d?.status?.conditions ?? []) as any[];
    const st = d?.status ?? {};
    const counts = `replicas ${st.replicas ?? 0}, updated ${st.updatedReplicas ?? 0}, available ${st.availableReplicas ?? 0}`;
    return `${counts}; ${conds.map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ""}`).join(", ") || "no conditions"}`;
}

async function podsText(client: KubeClient, spec: MemberSpec): Promise<string> {
    try {
        const pods = await client.get<{ items: any[] }>(
            `/api/v1/namespaces/${encodeURIComponent(spec.namespace)}/pods`,
            { labelSelector: labelSelector(podLabels(spec)) },
        );
        // A pod not scheduled has no container yet: the scheduler's reason (`Insufficient cpu`) is in its conditions.
        const why = pods.items.flatMap((p) => [
            ...((p.status?.conditions ?? []) as any[])
                .filter((c) => c.type === "PodScheduled" && c.status === "False")
                .map((c) => `pod ${p.metadata.name}: not scheduled (${c.message ?? c.reason})`),
            ...((p.status?.containerStatuses ?? []) as any[])
                .map((c) => c.state?.waiting)
                .filter(Boolean)
                .map((w) => `pod ${p.metadata.name}: ${w.reason}${w.message ? ` (${w.message})` : ""}`),
        ]);
        return why.length ? `; ${why.join("; ")}` : "";
    } catch {
        return ""; // the reason we have is the rollout's: a failing pod listing adds nothing to it
    }
}
