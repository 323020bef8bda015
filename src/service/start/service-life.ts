/**
 * The service's lifecycle as one list (lifecycle.ts): read top to bottom it is the start order, bottom
 * to top the stop order. Built once the API listens and the parts exist (server.ts), so no part here
 * is used before it exists. A part with no start is placed where it must stop: the lease store closes
 * last, so releases of answers still in flight reach it; the stores' writers close after the lock.
 */
import type { Logger } from "pino";
import { type EngineHome, fileBackendDir } from "../../engine";
import { watchStackCheckpoint } from "../control/stack-watch";
import type { Gateway, GatewayAddresses } from "../gateway";
import type { StackLead } from "./leading";
import type { LifePart } from "./lifecycle";
import { type ApiListener, listenGateway } from "./listeners";
import type { ServeOptions } from "./options";
import type { Parts, Readiness } from "./parts";
import { closeListeners, type StopHow } from "./stop";

/** What the list is made from; `state` is written by its parts (readiness, the gateway's addresses). */
export interface LifeInputs {
    opts: ServeOptions;
    log: Logger;
    home: EngineHome;
    parts: Parts;
    api: ApiListener;
    gateway?: Gateway;
    lead: StackLead;
    state: { ready: Readiness; gatewayAt?: GatewayAddresses };
}

/** Every part of the service, in start order; the stop walks it backward (server.ts, stop.ts). */
export function serviceLife(s: LifeInputs): LifePart<StopHow>[] {
    return [...frontLife(s), ...watchingLife(s), ...leadingLife(s)];
}

/**
 * The front: what closes last (the lease store, the listeners, the replicas' shared connection), then
 * the lease store's connect, the gateway's ports and the recovery: alone, this process leads from the
 * start (recovery before anything is served); a replica serves from what state holds and takes the stack
 * up when it wins the leader lock.
 */
function frontLife({ opts, log, parts, api, gateway, lead, state }: LifeInputs): LifePart<StopHow>[] {
    const { redisStore, cluster } = parts;
    return [
        // Connected below; closed last, so releases of answers still in flight reach it.
        { name: "lease store", stop: () => redisStore?.close() },
        // The API listens already (server.ts: a taken port fails the start at once); the gateway below.
        { name: "listeners", stop: (how) => closeListeners(api.server, gateway, how.graceMs) },
        // Closed once every part that shared it has stopped.
        { name: "shared store connection", stop: () => parts.session?.redis.disconnect() },
        {
            name: "lease store connect",
            start: async () => {
                if (redisStore && !(await redisStore.connect()))
                    log.warn(
                        redisStore.ready(),
                        "starting without the lease store: leases answer 503 store_unavailable until it is reachable",
                    );
            },
        },
        {
            name: "gateway",
            start: async () => {
                state.gatewayAt = gateway && (await listenGateway(gateway, opts.gateway!));
                if (state.gatewayAt?.url) cluster?.advertiseGateway(state.gatewayAt.url);
            },
        },
        {
            name: "recovery",
            start: async () => {
                if (!cluster) return lead.lead();
                await cluster.assertOneHome();
                await parts.refreshFleet();
            },
        },
    ];
}

/**
 * What watches the members before the service is ready: provider checks, the scale queue, the leader's
 * verdicts (a replica probes only while it leads: StackLead) or the probes (alone), the timeline, and
 * the service's own timers.
 */
function watchingLife(s: LifeInputs): LifePart<StopHow>[] {
    const { parts } = s;
    return [
        { name: "provider health", start: () => parts.providerHealth.start(), stop: () => parts.providerHealth.stop() },
        { name: "scale queue", start: () => parts.scaleQueue?.start(), stop: () => parts.scaleQueue?.close() },
        { name: "verdicts", start: () => parts.verdicts?.start(), stop: () => parts.verdicts?.close() },
        {
            name: "probes",
            start: () => {
                if (!parts.verdicts) parts.health.start();
            },
            stop: () => parts.health.stop(),
        },
        { name: "timeline", start: () => parts.timeline.start(), stop: () => parts.timeline.stop() },
        timersPart(s),
    ];
}

/**
 * The lease sweep, and what follows an `egress up` run beside the service: its checkpoint writes at
 * once, and the stack outputs now and then in case the watch misses one (or the backend is not a
 * directory). The watch and the leader's local socket close with the API listener.
 */
function timersPart({ opts, log, home, parts, api, lead }: LifeInputs): LifePart<StopHow> {
    let timers: NodeJS.Timeout[] = [];
    const followOutside = (why: string) => () => {
        if (!parts.scaler.applying())
            parts.refreshFleet().then(
                () => log.debug({ why }, "fleet re-read from stack outputs"),
                (e) => log.warn({ err: e }, "re-reading stack outputs failed"),
            );
    };
    const start = () => {
        // Leases expire lazily on every call; the sweep also drops old target cooldowns and ended-lease records.
        const sweeper = setInterval(() => parts.leases.sweep(), 5_000).unref();
        const checkpointWatch = watchStackCheckpoint({
            backendDir: fileBackendDir(home, opts.engineEnv),
            stack: opts.stack,
            version: () => parts.driver.stateVersion(),
            log,
            onChange: followOutside("checkpoint changed"),
        });
        const outputsPoll = setInterval(followOutside("poll"), opts.outputsPollMs ?? 30_000).unref();
        api.server.once("close", () => {
            checkpointWatch?.close();
            lead.close().catch((e) => log.warn({ err: e }, "closing the local socket failed"));
        });
        timers = [sweeper, outputsPoll];
    };
    return { name: "timers", start, stop: () => timers.forEach((t) => clearInterval(t)) };
}

/**
 * Ready, then the leader election and the loops that start operations. Stopping walks back: the loops;
 * what followers queue waits for the next leader; the running operation (or cancels it) and what it
 * recorded, flushed while this replica still holds the lock; the lock; the stores' writers.
 */
function leadingLife({ log, parts: p, lead, state }: LifeInputs): LifePart<StopHow>[] {
    return [
        {
            name: "store writers",
            stop: () => {
                p.journal?.close();
                p.events?.close();
                p.desired?.close();
                p.healStore?.close(); // after the running operation: a heal settling writes its back-off
            },
        },
        { name: "ready", start: () => (state.ready = { ok: true }) },
        {
            name: "cluster",
            start: async () => {
                if (!p.cluster) return;
                p.cluster.subscribe((on) => lead.changed(on));
                await p.cluster.start();
                await lead.idle(); // a replica that won the lock at once has recovered and converged by "ready"
            },
            stop: () => p.cluster?.stop(), // after the running operation: the lock guards it to the end
        },
        {
            name: "running operation",
            stop: async (how) => {
                await p.scaler.drain({ cancel: how.cancel });
                // The settled (or set-aside) records reach the store's journal while this replica still holds the lock.
                await p.ops
                    .flushed()
                    .catch((e) => log.warn({ err: e }, "the operation journal could not be written before stopping"));
                await p.desired
                    ?.flushed()
                    .catch((e) => log.warn({ err: e }, "the desired counts could not be written before stopping"));
                await p.events?.flushed(); // appended only while this replica holds the lock
            },
        },
        // What followers queue from now on waits for the next leader.
        { name: "scale queue hand-off", stop: () => p.scaleQueue?.follow() },
        {
            name: "loops",
            start: () => {
                p.reconciler.start();
                p.autoscaler.start();
                p.rotator.start();
            },
            stop: async () => {
                await p.reconciler.stop();
                await p.autoscaler.stop();
                await p.rotator.stop();
            },
        },
    ];
}
