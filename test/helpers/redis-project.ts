/**
 * What every test file of replicas sets up: a project of its own (helpers/processes.ts procProject) and a
 * throwaway redis-server, made before its tests; after them, the services it started are killed, its
 * stack destroyed and both removed. `set` hands them to the file's variables once they exist.
 */
import { after, before } from "node:test";
import { cli, killServices, procProject, type ProcProject } from "./processes";
import { startRedis, type TestRedis } from "./redis";

export function withRedisProject(
    stack: string,
    config: object,
    set: (made: { p: ProcProject; redis: TestRedis }) => void,
    opts: { aof?: boolean } = {},
): void {
    const made: { p?: ProcProject; redis?: TestRedis } = {};
    before(async () => {
        const redis = (made.redis = await startRedis(opts));
        const p = (made.p = procProject(stack, config));
        set({ p, redis });
    });
    after(async () => {
        killServices();
        if (made.p) {
            cli(made.p, ["destroy", "--yes", "--quiet"]);
            made.p.cleanup();
        }
        await made.redis?.cleanup();
    });
}
