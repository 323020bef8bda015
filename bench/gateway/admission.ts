/** The in-process part of bench/gateway.ts: what the gateway decides per request, without any I/O. */

/**
 * The gateway's own decisions per request, in process and without I/O: token check (SHA-256, constant
 * time), username, concurrency slot, lease and release. What the gateway adds beyond one more proxy hop.
 */
export function admissionMicros(seconds = 1): number {
    const { Fleet } = require("../../src/service/fleet/fleet") as typeof import("../../src/service/fleet/fleet");
    const { LeaseManager } = require("../../src/service/leases") as typeof import("../../src/service/leases");
    const { Admission } =
        require("../../src/service/gateway/admission") as typeof import("../../src/service/gateway/admission");
    const { immediate } = require("../../src/service/store/types") as typeof import("../../src/service/store/types");
    const { sha256 } = require("../../src/service/http/auth") as typeof import("../../src/service/http/auth");
    const fleet = new Fleet(new LeaseManager({ targetCooldownSeconds: 0 }), {
        setMembers() {},
        get: () => ({ state: "healthy" }),
    });
    fleet.sync(
        Array.from({ length: 8 }, (_, index) => ({
            id: `m-${index}`,
            pool: "bench",
            provider: "local",
            kind: "local" as const,
            index,
            host: "127.0.0.1",
            port: 1000 + index,
            url: `http://127.0.0.1:${1000 + index}`,
            zone: "local",
        })),
        [{ name: "bench", cooldownSeconds: 0 } as never],
    );
    const token = "bench-token-0123456789abcdef";
    const admission = new Admission(
        [{ name: "bench", sha256: sha256(token).toString("hex"), scopes: ["lease"] }],
        fleet,
        3600,
    );
    const one = () => {
        const r = immediate(admission.admit({ username: "bench_session_s1", password: token, hostname: "127.0.0.1" }));
        if (!r.ok) throw new Error(r.refusal.message);
        r.admitted.leave();
        immediate(fleet.release(r.admitted.lease.id, "ok"));
    };
    for (let i = 0; i < 20_000; i++) one();
    let n = 0;
    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    while (performance.now() < end) for (let i = 0; i < 1000; i++, n++) one();
    return ((performance.now() - t0) * 1000) / n;
}
