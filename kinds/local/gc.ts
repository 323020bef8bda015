import * as fs from "node:fs";
import * as path from "node:path";
import type { LocalProviderConfig } from "./config";
import { isOurProcess, stopProxy } from "./process";
import type { Collector, CollectorFactory, ManagedThing } from "../../src/gc/types";

/**
 * Local proxies are found by their files under `<runDir>/local/<stack>/`: `<id>.json` holds the pid.
 * Only live processes whose argv carries that id count (a dead one's files are cleaned as well).
 */
export const localCollector = (runDir: string): CollectorFactory<LocalProviderConfig> => (providerName): Collector => ({
    provider: providerName,
    kind: "local",
    async list({ stack }): Promise<ManagedThing[]> {
        const dir = path.join(runDir, "local", stack);
        if (!fs.existsSync(dir)) return [];
        return fs.readdirSync(dir).filter((f) => f.endsWith(".json")).map((f) => {
            const info = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as { id: string; pid: number; port: number };
            // IDs are `<stack>-<member>` (kinds/local/provider.ts); older ones carry a `-<8 hex>` suffix.
            const member = info.id.startsWith(`${stack}-`) ? info.id.slice(stack.length + 1).replace(/-(?=[0-9a-f]*[a-f])[0-9a-f]{8}$/, "") : undefined;
            return { kind: "local" as const, provider: providerName, type: isOurProcess(info.pid, info.id) ? "process" : "stale-files", name: info.id, location: dir, member };
        });
    },
    async remove(thing): Promise<void> {
        const dir = thing.location;
        const file = path.join(dir, `${thing.name}.json`);
        const pid = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as { pid: number }).pid : -1;
        await stopProxy(pid, thing.name, dir);
    },
});
