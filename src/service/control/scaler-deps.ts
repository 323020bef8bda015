import type { Logger } from "pino";
import type { StackDriver } from "../../engine";
import type { ProxyMember } from "../../model";
import type { OperationLog } from "../../state/operations/journal";
import type { Operation } from "../../state/operations/operation";
import type { Drainer } from "./drain/drainer";
import type { HealthWatch } from "../../fleet-ops/healthy";
import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

export interface ScalerDeps {
    driver: StackDriver;
    projectRoot: string;
    stack: string;
    ops: OperationLog;
    log: Logger;
    /**
     * Called after every operation settles, with the stack output `proxies` when the update succeeded
     * (the fleet refreshes from them; after a failure it re-reads the outputs itself).
     */
    onSettled?: (op: Operation, proxies?: ProxyMember[]) => Promise<void> | void;
    /**
     * Takes the stack's writer lock (src/engine/writer-lock.ts), waiting while another writer — a
     * person's `egress up` or `scale` — holds it; aborted when the service stops. Held from writing the
     * stack file to the end of the engine run. `onWait` hears who holds it, each time that changes.
     */
    lock?: (signal: AbortSignal, onWait?: (holder: string) => void) => Promise<{ release(): void }>;
    /**
     * Drain before removing members (src/service/control/drain): without it members are removed at once.
     * `members` is the fleet as state lists it.
     */
    drain?: { drainer: Drainer; members: () => { id: string; pool: string; index: number }[] };
    /**
     * What a rotation (rotate/run.ts) needs between its engine runs: the fleet re-synced with the members
     * an update left (so new ones are probed and leasable before the old ones drain), and their health.
     * Without it a rotation does not wait for health.
     */
    rotation?: HealthWatch;
    /**
     * Checked before every operation starts: false means this replica no longer leads the stack (its
     * leader lock is gone or taken over), so the operation is recorded interrupted and nothing runs.
     * While the store does not answer, the answer waits as long as the lock may still be this replica's,
     * or until `signal` (the service stops) aborts.
     */
    fence?: (signal?: AbortSignal) => Promise<boolean>;
    /**
     * Hears the stack file's counts (scalable pools) each time an operation wrote them (write-counts.ts):
     * with replicas they go to the store, so the next leader applies them whatever its host's copy of the
     * file says (src/state/cluster/desired.ts).
     */
    recordCounts?: (counts: Record<string, number>, operation: string) => void;
}

/** Scale requests are refused while the service starts (recovery) or stops; the route answers 503. */
export class NotAcceptingError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "NotAcceptingError" };
    }
    constructor(readonly reason: "starting" | "stopping") {
        super(
            reason === "starting"
                ? "the service is still recovering the stack; retry shortly"
                : "the service is shutting down; retry against the next instance",
        );
        this.name = "NotAcceptingError";
    }
}
