import * as fs from "node:fs";
import * as path from "node:path";
import type { LocalProviderConfig } from "./config";
import { isOurProcess, proxyInstallation, stopProxy } from "./process";
import type { Collector, CollectorFactory, ManagedThing } from "../kind";

/**
 * Local proxies are found by their files under `<runDir>/local/<stack>/`: `<id>.json` holds the pid.
 * Only live processes whose argv carries that id count (a dead one's files are cleaned as well), and only
 * those of this installation.
 */
export const localCollector =
    (runDir: string): CollectorFactory<LocalProviderConfig> =>
    (providerName): Collector => ({
        provider: providerName,
        kind: "local",
        async list({ stack, installation }): Promise<ManagedThing[]> {
            const dir = path.join(runDir, "local", stack);
            if (!fs.existsSync(dir)) return [];
            const infos = fs
                .readdirSync(dir)
                .filter((f) => f.endsWith(".json"))
                .map(
                    (f) =>
                        JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as {
                            id: string;
                            pid: number;
                            port: number;
                            installation?: string;
                        },
                );
            // Only what carries our installation (the live process's argv, else the ready file): a proxy of
            // another installation sharing this run dir, or one from before installation ids, is not ours to remove.
            const ours = (i: { pid: number; id: string; installation?: string }) =>
                (isOurProcess(i.pid, i.id) ? proxyInstallation(i.pid) : i.installation) === installation;
            return infos.filter(ours).map((info) => {
                // IDs are `<stack>-<member>` (components/local/provider.ts); older ones carry a `-<8 hex>` suffix.
                const member = info.id.startsWith(`${stack}-`)
                    ? info.id.slice(stack.length + 1).replace(/-(?=[0-9a-f]*[a-f])[0-9a-f]{8}$/, "")
                    : undefined;
                return {
                    kind: "local" as const,
                    provider: providerName,
                    type: isOurProcess(info.pid, info.id) ? "process" : "stale-files",
                    name: info.id,
                    location: dir,
                    member,
                };
            });
        },
        async remove(thing): Promise<void> {
            const dir = thing.location;
            const file = path.join(dir, `${thing.name}.json`);
            const pid = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as { pid: number }).pid : -1;
            await stopProxy(pid, thing.name, dir);
        },
    });
