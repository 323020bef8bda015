import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * The id of the EGRESS_HOME a replica runs from (`<runDir>/home-id`, made once): replicas of one stack
 * must share one, since the operation journal a new leader takes over, the writer lock and the stack's
 * service socket are files there (cluster.ts `assertOneHome` refuses a replica from another home).
 */
export function homeId(runDir: string): string {
    const file = path.join(runDir, "home-id");
    try {
        return fs.readFileSync(file, "utf8").trim();
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
    try {
        // `wx`: two replicas starting at once on a new home agree on the first one written.
        fs.writeFileSync(file, randomBytes(8).toString("hex"), { flag: "wx", mode: 0o600 });
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    return fs.readFileSync(file, "utf8").trim();
}
