/**
 * The service's one entry for the CLI (`egress serve`; test/unit/layers.test.ts holds the CLI to it): the
 * options the service takes, what the serve flags are checked with (the gateway's doors, the TLS pair), and
 * startService. The service itself (express, the gateway, the store clients) is loaded on startService's
 * first call, not with this file: it is a third of the CLI's start-up, and no other command needs it.
 */
import type { RunningService, ServeOptions } from "./start/options";

export type { RunningService, ServeOptions } from "./start/options";
export { readTlsPair, type TlsFiles } from "./start/tls";
export {
    type AllowRule,
    MAX_STICKY_PORTS,
    parseAllowRule,
    parseStickyRange,
    stickyClash,
    type StickyRange,
} from "./gateway/doors";

/** Starts the service (start/server.ts, loaded here on first use). */
export async function startService(opts: ServeOptions): Promise<RunningService> {
    const server = await import("./start/server");
    return server.startService(opts);
}
