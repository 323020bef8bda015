import type { StateBackend } from "../../engine";
import type { ProtectedEndpoint } from "../gateway/protected-targets";
import type { StoreSpec } from "../store";

/**
 * The servers the gateway never relays to (gateway/protected-targets.ts, 403 `forbidden_target`): the
 * lease store, which holds every lease, session and block; the Pulumi backend when it is a server
 * (PostgreSQL), which holds the stack's state; and this service's API, whose unauthenticated routes
 * (/metrics, /v1/echo, …) listen on loopback by default and must not become a crawler's through the
 * gateway. They often listen on this machine's loopback, which a local member reaches; the gateway adds
 * its own port when it listens.
 */
export function protectedEndpoints(
    store: StoreSpec | undefined,
    backend: StateBackend,
    api: { host: string; port: number },
): ProtectedEndpoint[] {
    const out: ProtectedEndpoint[] = [{ what: "this service's API", ...api }];
    if (store?.kind === "redis" && store.sentinel) {
        // The sentinels; the nodes they name are found at run time, and a replica that is promoted
        // later is not in this list: give Redis a password whenever local members run next to it.
        for (const s of store.sentinel.sentinels)
            out.push({ what: "the lease store's sentinel", host: s.host, port: s.port });
    } else if (store?.kind === "redis") {
        const u = new URL(store.url);
        out.push({ what: "the lease store", host: u.hostname, port: Number(u.port || 6379) });
    }
    if (backend.kind === "postgres") {
        // A URL without a host (a unix socket, `?host=/run/postgresql`) is not reachable over TCP at all.
        const u = parseUrl(backend.url);
        if (u?.hostname) out.push({ what: "the state backend", host: u.hostname, port: Number(u.port || 5432) });
    }
    return out;
}

function parseUrl(url: string): URL | undefined {
    try {
        return new URL(url);
    } catch {
        return undefined;
    }
}
