import Redis from "ioredis";
import { parseStoreSpec, redactStoreUrl } from "../service/store";
import type { LockFinding } from "./doctor-locks";

/**
 * The lease store `egress serve` would use (`--store`, else $EGRESS_STORE): memory needs nothing; Redis must
 * answer PING within 3 s. The URL is shown with its password masked, and so is any error that quotes it.
 */
export async function storeFindings(flag: string | undefined): Promise<LockFinding[]> {
    const from = flag !== undefined ? "--store" : "EGRESS_STORE";
    const raw = flag ?? process.env.EGRESS_STORE;
    if (raw === undefined || raw.trim() === "") return [];
    let spec;
    try {
        spec = parseStoreSpec(raw, from);
    } catch (e) {
        return [{ check: "store", ok: false, detail: (e as Error).message, fix: `fix ${from}` }];
    }
    if (spec.kind === "memory") return [{ check: "store", ok: true, detail: `memory (${from})` }];
    const shown = redactStoreUrl(spec.url);
    const redis = new Redis(spec.url, {
        lazyConnect: true,
        connectTimeout: 3_000,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        enableOfflineQueue: false,
    });
    let cause: Error | undefined; // the socket's own error (ECONNREFUSED, …): clearer than "Connection is closed."
    redis.on("error", (e: Error) => (cause ??= e));
    try {
        await redis.connect();
        const pong = await Promise.race([
            redis.ping(),
            new Promise<never>((_r, reject) =>
                setTimeout(() => reject(new Error("no answer to PING within 3 s")), 3_000).unref(),
            ),
        ]);
        return [{ check: "store", ok: pong === "PONG", detail: `redis ${shown} answers (${from})` }];
    } catch (e) {
        const why = (cause ?? (e as Error)).message.split(spec.url).join(shown);
        return [
            {
                check: "store",
                ok: false,
                detail: `redis ${shown} does not answer (${from}): ${why}`,
                fix: "start Redis, or fix the URL (host, port, password); `egress serve` answers 503 store_unavailable until it answers",
            },
        ];
    } finally {
        redis.disconnect();
    }
}
