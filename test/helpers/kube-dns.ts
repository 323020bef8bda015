/**
 * Cluster DNS for the kubernetes tests, in this process: a member's URL names its Service
 * (`<service>.<ns>.svc.cluster.local`, components/kubernetes/pod-proxy.ts), which no resolver here knows.
 * dns.lookup (what node's http, and so the health probes, use) is replaced so those names resolve to a
 * loopback address and no DNS query or probe leaves loopback; other names go to the real lookup.
 *
 * `serves(service, namespace)`: when given, a name resolves only while it answers true (else ENOTFOUND) —
 * a test stands in for kube-proxy by answering "the Service has a ready pod", so a probe passes only while
 * the member's pod really runs in the cluster.
 */
import dns = require("node:dns"); // the module object itself (not an import wrapper), so lookup can be replaced

const CLUSTER_NAME = /^([^.]+)\.([^.]+)\.svc\.cluster\.local\.?$/;

/** Installs the lookup; returns what puts the real one back. */
export function clusterNamesToLoopback(
    o: { address?: string; serves?: (service: string, namespace: string) => Promise<boolean> } = {},
): () => void {
    const realLookup = dns.lookup;
    const address = o.address ?? "127.0.0.2";
    (dns as any).lookup = (host: string, opts: any, cb?: any) => {
        if (typeof opts === "function") [cb, opts] = [opts, {}];
        const m = CLUSTER_NAME.exec(host);
        if (!m) return (realLookup as any)(host, opts, cb);
        const o2 = typeof opts === "number" ? { family: opts } : (opts ?? {});
        const answer = () => (o2.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4));
        if (!o.serves) return process.nextTick(answer);
        o.serves(m[1], m[2]).then(
            (yes) => {
                if (yes) return answer();
                const e: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${host} (no ready pod behind it)`);
                e.code = "ENOTFOUND";
                cb(e);
            },
            (e) => cb(e),
        );
    };
    return () => void ((dns as any).lookup = realLookup);
}
