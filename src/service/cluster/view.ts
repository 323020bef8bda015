import * as os from "node:os";
import type { Cluster } from "./cluster";
import type { LeaderInfo, ReplicaInfo } from "../../state/cluster/records";

/** GET /v1/cluster's answer. */
export interface ClusterView {
    self: string;
    store: "memory" | "redis";
    leader: LeaderInfo | null;
    replicas: (ReplicaInfo & { leader: boolean })[];
}

/**
 * The cluster as GET /v1/cluster shows it: from Redis with replicas, else this one process, which leads
 * since it started (its fencing token is 0: there is nothing to fence without a shared store).
 */
export async function clusterView(
    cluster: Cluster | undefined,
    self: { id: string; url: string; version: string; startedAt: string },
): Promise<ClusterView> {
    if (cluster) {
        const v = await cluster.view();
        return { self: cluster.id, store: "redis", leader: v.leader ?? null, replicas: v.replicas };
    }
    const now = new Date().toISOString();
    return {
        self: self.id,
        store: "memory",
        leader: { id: self.id, token: 0, since: self.startedAt },
        replicas: [
            {
                id: self.id,
                url: self.url,
                version: self.version,
                pid: process.pid,
                host: os.hostname(),
                startedAt: self.startedAt,
                lastHeartbeat: now,
                leader: true,
            },
        ],
    };
}
