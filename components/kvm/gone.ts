import type { GoneCheck, GoneCheckContext } from "../kind";
import type { KvmProviderConfig } from "./config";
import { NO_RETRY } from "../shared/retry";
import { GONE_STATES, listDomainStates, DomainState, withLibvirt } from "./libvirt";
import { connectionFor, memberObjectNames, privateKeyText } from "./naming";
import { virshDebugLog } from "./virsh-log";

/**
 * KVM: one `virsh list --all` per host of the entry (over the same verified SSH as the engine uses). A
 * member is gone when its domain is shut off, crashed, paused or suspended on a host, or defined on none
 * of them while every host answered. A host that does not answer says nothing about any member (its
 * guests may run fine; the provider check reports the host).
 */
export function kvmGoneCheck(ctx: GoneCheckContext<KvmProviderConfig>): GoneCheck {
    const entry = ctx.entry;
    const onCall = virshDebugLog(ctx.log);
    return async (members, signal) => {
        let key: string | undefined;
        try {
            key = privateKeyText(entry);
        } catch {
            return new Map();
        }
        const perHost = await Promise.all(
            entry.hosts.map(async (host) => {
                if (signal?.aborted) return undefined;
                try {
                    return {
                        host: host.name,
                        states: await withLibvirt(connectionFor(entry, host), key, (virsh) => listDomainStates(virsh), {
                            retry: NO_RETRY,
                            onCall,
                        }),
                    };
                } catch {
                    return undefined;
                }
            }),
        );
        const answered = perHost.filter((h): h is { host: string; states: Map<string, DomainState> } => !!h);
        const gone = new Map<string, string>();
        for (const m of members) {
            const domain = memberObjectNames(ctx.installation.id, m.id).domain;
            const found = answered.find((h) => h.states.has(domain));
            if (found) {
                const state = found.states.get(domain)!;
                if (GONE_STATES.includes(state)) gone.set(m.id, `domain ${domain} is ${state} on ${found.host}`);
            } else if (answered.length === perHost.length) {
                gone.set(m.id, `domain ${domain} is not defined on any host of provider ${m.provider}`);
            }
        }
        return gone;
    };
}
