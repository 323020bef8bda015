import type { Logger } from "pino";
import { type EngineHome, fileBackendDir } from "../../engine";
import { watchStackCheckpoint } from "../control/stack-watch";
import type { Gateway, GatewayAddresses } from "../gateway";
import type { StackLead } from "./leading";
import type { LifePart, StopHow } from "./lifecycle";
import { type ApiListener, listenGateway } from "./listeners";
import type { ServeOptions } from "./options";
import type { Parts, Readiness } from "./parts";

/** How long answers still being written at the end of a graceful stop may take before their connections are cut. */
const CLOSE_GRACE_MS = 2_000;

/** What the service's life is made of: its built parts, its listeners and its leadership. */
export interface Life {
    opts: ServeOptions;
    log: Logger;
    home: EngineHome;
    parts: Parts;
    api: ApiListener;
    gateway?: Gateway;
    lead: StackLead;
    setReady(r: Readiness): void;
    /** Where the gateway answers, once the listeners part started. */
    gatewayAt?: GatewayAddresses;
}

/**
 * The service's life, in start order (lifecycle.ts walks it forward to start, backward to stop). The
 * API listens before this list begins (its port is the probes' default check URL), answering 503 until
 * `ready`.
 */
export function serviceLife(l: Life): LifePart[] {
    return [
        storeSession(l),
        listeners(l),
        stackAtStart(l),
        providerChecks(l),
        health(l),
        scaleQueue(l),
        timeline(l),
        storeWriters(l),
        followOutside(l),
        ready(l),
        leadership(l),
        runningOperation(l),
        policies(l),
    ];
}

/** The store's connections (store-session.ts): opened first, closed last. */
function storeSession({ parts, log }: Life): LifePart {
    return { name: "store session", start: () => parts.session.connect(log), stop: () => parts.session.close() };
}

/**
 * The gateway's ports, beside the API's; closed together, with a grace for answers still being written
 * (none after a failed start). The CLI's unix socket (leading.ts) closes once the API has.
 */
function listeners(l: Life): LifePart {
    const { api, gateway, parts, log } = l;
    const closeAll = async (graceMs: number) => {
        const closed = new Promise<void>((r) => api.server.close(() => r()));
        const gatewayClosed = gateway?.close(graceMs);
        if (graceMs) api.server.closeIdleConnections();
        else api.server.closeAllConnections();
        // Answers being written get a moment to finish, then whatever is left is cut.
        const cut = setTimeout(() => api.server.closeAllConnections(), graceMs);
        await closed;
        l.lead.close().catch((e) => log.warn({ err: e }, "closing the local socket failed"));
        await gatewayClosed;
        clearTimeout(cut);
    };
    return {
        name: "listeners",
        async start() {
            try {
                if (gateway) l.gatewayAt = await listenGateway(gateway, l.opts.gateway!);
            } catch (e) {
                await closeAll(0);
                throw e;
            }
            if (l.gatewayAt?.url) parts.cluster?.advertiseGateway(l.gatewayAt.url);
        },
        stop: (how: StopHow) => closeAll(how.failed ? 0 : CLOSE_GRACE_MS),
    };
}

/**
 * Alone, this process leads from the start: recovery before anything is served. A replica serves from
 * what state holds and takes the stack up when it wins the leader lock (`leadership`).
 */
function stackAtStart({ parts, lead }: Life): LifePart {
    return {
        name: "stack",
        async start() {
            if (!parts.cluster) return lead.lead();
            await parts.cluster.assertOneHome();
            await parts.refreshFleet();
        },
    };
}

function providerChecks({ parts }: Life): LifePart {
    return {
        name: "provider checks",
        start: () => parts.providerHealth.start(),
        stop: () => parts.providerHealth.stop(),
    };
}

/**
 * Alone, this process probes from now on; a replica probes only while it leads (StackLead) and
 * otherwise shows the leader's verdicts, read from now on.
 */
function health({ parts }: Life): LifePart {
    return {
        name: "health",
        start: () => (parts.verdicts ? parts.verdicts.start() : parts.health.start()),
        async stop() {
            await parts.health.stop();
            await parts.verdicts?.close();
        },
    };
}

/** A replica's queue of scale requests for the leader (cluster/scale-queue.ts). */
function scaleQueue({ parts }: Life): LifePart {
    return { name: "scale queue", start: () => parts.scaleQueue?.start(), stop: () => parts.scaleQueue?.close() };
}

function timeline({ parts }: Life): LifePart {
    return { name: "timeline", start: () => parts.timeline.start(), stop: () => parts.timeline.stop() };
}

/**
 * What a replica writes to the store only while it holds the lock (journal, event streams, desired
 * counts, repair back-off): written on demand, closed after the lock is given up and the running
 * operation settled (a heal settling writes its back-off).
 */
function storeWriters({ parts }: Life): LifePart {
    return {
        name: "store writers",
        stop() {
            parts.journal?.close();
            parts.events?.close();
            parts.desired?.close();
            parts.healStore?.close();
        },
    };
}

/**
 * Leases expire lazily on every call; the sweep also drops old target cooldowns and ended-lease records.
 * A person may run `egress up` beside the service: its checkpoint writes are followed at once, and the
 * outputs re-read now and then in case the watch misses one (or the backend is not a directory).
 */
function followOutside({ parts, opts, home, log }: Life): LifePart {
    let timers: NodeJS.Timeout[] = [];
    let watch: ReturnType<typeof watchStackCheckpoint>;
    const reread = (why: string) => () => {
        if (!parts.scaler.applying())
            parts.refreshFleet().then(
                () => log.debug({ why }, "fleet re-read from stack outputs"),
                (e) => log.warn({ err: e }, "re-reading stack outputs failed"),
            );
    };
    return {
        name: "sweeps and outside changes",
        start() {
            watch = watchStackCheckpoint({
                backendDir: fileBackendDir(home, opts.engineEnv),
                stack: opts.stack,
                version: () => parts.driver.stateVersion(),
                log,
                onChange: reread("checkpoint changed"),
            });
            timers = [
                setInterval(() => parts.leases.sweep(), 5_000).unref(),
                setInterval(reread("poll"), opts.outputsPollMs ?? 30_000).unref(),
            ];
        },
        stop() {
            for (const t of timers) clearInterval(t);
            watch?.close();
        },
    };
}

function ready({ setReady }: Life): LifePart {
    return { name: "ready", start: () => setReady({ ok: true }) };
}

/**
 * A replica joins the leader election: leading and following are StackLead's (leading.ts). A replica
 * that won the lock at once has recovered and converged by "ready". Stopping gives the lock up at
 * once (after the running operation: the lock guards it to the end).
 */
function leadership({ parts, lead }: Life): LifePart {
    const cluster = parts.cluster;
    return {
        name: "leadership",
        async start() {
            if (!cluster) return;
            cluster.subscribe((on) => lead.changed(on));
            await cluster.start();
            await lead.idle();
        },
        stop: () => cluster?.stop(),
    };
}

/**
 * Nothing to start; on a stop, the running operation finishes (or is cancelled safely), and its
 * records reach the store while this replica still holds the lock.
 */
function runningOperation({ parts, log }: Life): LifePart {
    return {
        name: "running operation",
        async stop(how: StopHow) {
            await parts.scaleQueue?.follow(); // what followers queue from now on waits for the next leader
            await parts.scaler.drain(how.drain);
            await parts.ops
                .flushed()
                .catch((e) => log.warn({ err: e }, "the operation journal could not be written before stopping"));
            await parts.desired
                ?.flushed()
                .catch((e) => log.warn({ err: e }, "the desired counts could not be written before stopping"));
            await parts.events?.flushed(); // appended only while this replica holds the lock
        },
    };
}

/** The loops that ask the scaler for operations: repair, autoscaling, rotation. */
function policies({ parts }: Life): LifePart {
    const loops = [parts.reconciler, parts.autoscaler, parts.rotator];
    return {
        name: "policies",
        start() {
            for (const l of loops) l.start();
        },
        async stop() {
            for (const l of loops) await l.stop();
        },
    };
}
