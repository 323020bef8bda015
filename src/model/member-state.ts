/**
 * How a member component keeps its member in state (issue 33: every byte is kept per member). Its inputs
 * hold its identity (components/shared/member.ts memberIdentity); its `member` output holds only what the
 * identity does not say: the address, and whatever differs (a port the kernel chose, labels). membersOf
 * (src/engine/checkpoint.ts) puts the two back together. State written before holds the whole member in
 * the output, which reads the same way.
 */
import type { ProxyMember } from "./member";

/** What a member component registers as its inputs: the member without its address. */
export type MemberIdentity = Omit<ProxyMember, "host" | "url">;

/** `<scheme>://host:port` (IPv6 in brackets); "" while the host is not known yet, so nobody dials `http://:3128`. */
export function memberUrl(host: string, port: number, scheme: "http" | "https" = "http"): string {
    return host ? `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}` : "";
}

/** The member output a component records: `m` without what `identity` says and without a URL memberUrl gives. */
export function memberDelta(m: ProxyMember, identity: MemberIdentity): Partial<ProxyMember> {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m)) {
        if (k === "url") {
            if (v !== memberUrl(m.host, m.port)) out.url = v;
        } else if (k === "host" || JSON.stringify(v) !== JSON.stringify((identity as Record<string, unknown>)[k]))
            out[k] = v;
    }
    return out as Partial<ProxyMember>;
}

/** The member a component's state describes: its identity input with its recorded output over it. */
export function memberOfState(identity: MemberIdentity | undefined, recorded: Partial<ProxyMember>): ProxyMember {
    const m = { ...identity, ...recorded } as ProxyMember;
    return { ...m, url: recorded.url ?? memberUrl(m.host ?? "", m.port) };
}
