/** Reads of several `egress serve` replicas of one stack (processes.ts `serve` with `--store`). */
import { type ServeProcess } from "./processes";
import { waitFor } from "./harness";

/** GET /v1/cluster of one replica. */
export const clusterOf = async (svc: ServeProcess) => (await svc.call("GET", "/v1/cluster")).body;

/** The replica that leads (by its own /v1/cluster `self`), once all `live` agree on one. */
export async function leaderOf(live: ServeProcess[], timeoutMs = 15_000): Promise<ServeProcess> {
    return waitFor(
        "one leader all replicas agree on",
        async () => {
            const views = await Promise.all(live.map(clusterOf));
            const ids = new Set(views.map((v) => v.leader?.id));
            if (ids.size !== 1 || !views[0].leader) return undefined;
            if (!views.every((v) => v.replicas.length === live.length)) return undefined;
            return live[views.findIndex((v) => v.self === views[0].leader.id)];
        },
        timeoutMs,
        100,
    );
}
