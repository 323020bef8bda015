import type { Logger } from "pino";
import { parseEgressConfig } from "../../config";
import { checkerFor, kindOf } from "../../../components/registry";
import type { ServeOptions } from "./options";
import type { Parts } from "./parts";

/**
 * Restart safety, before the service accepts anything: clear what a crashed run left (under the stack's
 * writer lock), rebuild the fleet view from state, then set up the provider checks and liveness hooks
 * from the stack's providers.
 */
export async function recoverStack(p: Parts, opts: ServeOptions, o: { log: Logger; runDir: string; checkUrl: string }) {
    const { log, runDir } = o;
    const lock = await p.writerLock();
    try {
        for (const what of await p.driver.recover()) log.warn({ stack: opts.stack }, what);
    } finally {
        lock.release();
    }
    await p.refreshFleet();
    const raw = await p.driver.config();
    const cfg = parseEgressConfig({ providers: raw.providers ?? {}, pools: raw.pools ?? [] }, opts.projectRoot);
    const remote = Object.entries(cfg.providers)
        .filter(([, e]) => !kindOf(e).onThisMachine)
        .map(([n]) => n);
    if (remote.length && !opts.checkUrl)
        log.warn(
            { providers: remote, checkUrl: o.checkUrl },
            "health probes go to this service's loopback echo, which proxies on other machines cannot reach: their members stay unhealthy and are never leased; set --check-url (EGRESS_CHECK_URL) to a URL the proxies can reach",
        );
    p.providerHealth.setCheckers(
        Object.entries(cfg.providers).map(([name, entry]) =>
            checkerFor(name, entry, runDir, opts.stack, { timeoutMs: p.providerHealth.timeoutMs, log }),
        ),
    );
    await p.gone.setProviders(cfg.providers);
}
