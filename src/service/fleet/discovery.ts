import type { ProxyMember } from "../../model";
import type { Lease } from "../leases/types";
import { lifecycleOf } from "./lifecycle";
import type { ActiveLeaseView, HealthSource, ProxyView } from "./views";

/**
 * Member `m` as discovery shows it (Fleet.proxies), from its health `h` and what the fleet knows of it
 * besides: `url` is the one to show (with its credentials or bare), `drain` and `opError` this replica's
 * or the leader's notes (member-notes.ts).
 */
export function proxyView(
    m: ProxyMember,
    h: ReturnType<HealthSource["get"]>,
    s: {
        url: string;
        leased: boolean;
        drain?: { until: number };
        opError?: { message: string; at: number };
        /** Its labels as selectors see them (its pool's, its kind's, its zone: Fleet's labelsOf). */
        labels?: Record<string, string>;
    },
): ProxyView {
    const life = lifecycleOf({
        hasAddress: !!m.host,
        draining: !!s.drain,
        health: h?.state ?? "unknown",
        probe: h,
        opError: s.opError,
    });
    const view: ProxyView = {
        ...m,
        url: s.url,
        ...(s.labels && { labels: s.labels }),
        health: h?.state ?? "unknown",
        egressIp: h?.egressIp,
        probeLatencyMs: h?.lastLatencyMs,
        leased: s.leased,
        ...life,
    };
    if (s.drain) view.drainingUntil = new Date(s.drain.until).toISOString();
    return view;
}

/** An active lease as the dashboard lists it (Fleet.activeLeases). */
export function activeLeaseView(l: Lease): ActiveLeaseView {
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
        proxy: l.proxyId,
        pool: l.pool,
        ...(l.target ? { target: l.target } : {}),
        leasedAt: iso(l.leasedAt),
        expiresAt: iso(l.expiresAt),
    };
}
