/**
 * Where a test's stack keeps its Pulumi state, for test bodies shared between backends (crash-matrix.ts,
 * replicas-suite.ts): the file backend procProject makes by default, or a real PostgreSQL 15 the test
 * starts itself (postgres.ts) and hands to every egress process as PULUMI_BACKEND_URL (docs/engine.md).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { backendLockFiles, type ProcProject } from "./processes";
import { startPostgres, type TestPostgres } from "./postgres";

export interface StateBackend {
    /** In the test names and printed tables: "file", "postgres". */
    name: string;
    /** Starts what the backend needs; `env` goes to every egress process (PULUMI_BACKEND_URL). */
    start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
    /** The backend's Pulumi locks of the project `p` (lock files, lock rows): none may be left. */
    locks(p: ProcProject): string[];
    /** The stack's checkpoint is in this backend, and nowhere else: the test ran on the backend it names. */
    holdsState(p: ProcProject): boolean;
}

/** The file backend's checkpoint of `p`'s stack (project `egress`, Pulumi.yaml). */
const checkpointFile = (p: ProcProject) => path.join(p.backendDir, ".pulumi", "stacks", "egress", `${p.stack}.json`);

/** procProject's own `file://<dir>/backend`: nothing to start. */
export const fileBackend: StateBackend = {
    name: "file",
    start: async () => ({ env: {}, stop: async () => undefined }),
    locks: backendLockFiles,
    holdsState: (p) => fs.existsSync(checkpointFile(p)),
};

/** A throwaway PostgreSQL for the calling test file (one per call), stopped by `stop`. */
export function postgresBackend(): StateBackend {
    let pg: TestPostgres | undefined;
    return {
        name: "postgres",
        async start() {
            const started = await startPostgres();
            pg = started;
            return { env: { PULUMI_BACKEND_URL: started.url }, stop: () => started.cleanup() };
        },
        locks: () => {
            if (!pg) throw new Error("postgresBackend: locks() before start()");
            return pg.keys("locks");
        },
        holdsState(p) {
            if (!pg) throw new Error("postgresBackend: holdsState() before start()");
            // Rows are keyed by the file backend's paths under the database name, gzipped (docs/engine.md).
            const row = `postgres/.pulumi/stacks/egress/${p.stack}.json.gz`;
            return pg.keys("stacks").includes(row) && !fs.existsSync(path.join(p.backendDir, ".pulumi"));
        },
    };
}
