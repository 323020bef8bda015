import type { ProxyMember } from "../../src/model";

/**
 * A `local` member of pool `web` as the stack outputs list it: `web-<i>` at 127.0.0.1:`port`. The one
 * fixture for tests that need members without running them (probes, verdicts, sessions, back-off).
 */
export function localMember(i: number, port = 20_000 + i): ProxyMember {
    return {
        id: `web-${i}`,
        pool: "web",
        provider: "local",
        kind: "local",
        index: i,
        host: "127.0.0.1",
        port,
        url: `http://127.0.0.1:${port}`,
        zone: "local",
    };
}
