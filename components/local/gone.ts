import * as path from "node:path";
import type { GoneCheck, GoneCheckContext } from "../kind";
import { proxyInstallation, runningProxies } from "./process";
import { ownedBy } from "../../src/model";

/**
 * Local: a member is gone when no process in this stack's state dir carries its proxy id in its argv
 * (process.ts starts it with `--id <stack>-<member> --ready <stateDir>/<id>.json`).
 * One scan of /proc per round, whatever the member count.
 */
export function localGoneCheck(ctx: Pick<GoneCheckContext, "runDir" | "stack" | "installation">): GoneCheck {
    const stateDir = path.join(ctx.runDir, "local", ctx.stack);
    return async (members) => {
        const running = runningProxies(stateDir);
        const gone = new Map<string, string>();
        for (const m of members) {
            const id = `${ctx.stack}-${m.id}`;
            // Another installation's process under the same id (a shared run dir) does not keep ours alive.
            if (!(running.get(id) ?? []).some((pid) => ownedBy(proxyInstallation(pid), ctx.installation)))
                gone.set(m.id, `no process of local proxy ${id} is running`);
        }
        return gone;
    };
}
