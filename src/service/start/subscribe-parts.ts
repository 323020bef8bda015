/**
 * The calls that go up the layers (a probe verdict to the fleet, a settled operation to the
 * reconciler, autoscaler and rotator), connected once every part exists. Separate from parts.ts so
 * building the parts and wiring their upward callbacks read as the two steps they are.
 */
import type { Logger } from "pino";
import type { Parts } from "./parts";

/** Connects the calls that go up the layers, once every part exists. */
export function subscribeParts(p: Parts, log: Logger): void {
    p.health.subscribe({
        credentials: (m) => p.fleet.credentialsOf(m),
        onTransition: (t) => {
            log[t.to === "unhealthy" ? "warn" : "info"](
                { proxy: t.id, from: t.from, to: t.to, reason: t.reason },
                "proxy health changed",
            );
            p.fleet.healthChanged(t.id, t.to);
            p.verdicts?.changed();
        },
        onProbe: (r) => {
            p.metrics.probes.inc({ result: r.ok ? "ok" : "fail" });
            p.metrics.probeLatency.observe(r.latencyMs / 1000);
        },
    });
    // A follower's fleet takes the leader's verdicts (its lease eligibility is the leader's when it takes over).
    p.verdicts?.subscribe((id, state) => p.fleet.healthChanged(id, state));
    // ... and the leader's drains and failed operations, published with its verdicts.
    p.verdicts?.publishNotes(() => p.fleet.notes());
    p.fleet.onRefused((pool, via) => p.autoscaler.refusal(pool, via));
    // With Redis every replica's outcomes reach the leader through the store (verdicts' onOutcomes); counted
    // here too, the leader's own would count twice.
    if (!p.verdicts) p.fleet.onOutcome((member, outcome) => p.rotator.outcome(member, outcome));
    p.scaler.onSettled(async (op, proxies) => {
        p.metrics.operations.inc({ kind: op.kind, result: op.status });
        if (op.startedAt && op.finishedAt)
            p.metrics.operationDuration.observe(
                { kind: op.kind },
                (Date.parse(op.finishedAt) - Date.parse(op.startedAt)) / 1000,
            );
        p.reconciler.settled(op);
        p.autoscaler.settled(op);
        p.rotator.settled(op);
        await p.gone
            .rebuild()
            .catch((e) =>
                log.warn({ err: e }, "reading the stack's installation failed; liveness hooks keep the previous one"),
            );
        await p.refreshFleet(proxies);
        p.fleet.operationSettled(op);
    });
}
