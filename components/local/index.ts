/**
 * Kind `local`: proxies as detached processes on 127.0.0.1 of the machine running Pulumi. Everything the
 * kind is, for the registry; heavy parts load on use.
 */
import * as path from "node:path";
import { defineKind } from "../kind";
import { localProviderSchema } from "./config";

/** The proxy server script, built beside these files (dist/components/local/proxy-server.js). */
export { LOCAL_SERVER_SCRIPT } from "./process";
import { LOCAL_SERVER_SCRIPT } from "./process";

export const localKind = defineKind({
    type: "local",
    schema: localProviderSchema,
    onThisMachine: true,
    shardable: true,
    components: () => (require("./component") as typeof import("./component")).localComponents,
    pendingCreateUndo: () => {
        const { LOCAL_PROCESS_TYPE, undoLocalCreate } = require("./recover") as typeof import("./recover");
        return { [LOCAL_PROCESS_TYPE]: undoLocalCreate };
    },
    dynamicProviders: () => {
        const { LOCAL_PROCESS_TYPE, localProcessProvider } = require("./provider") as typeof import("./provider");
        return { [LOCAL_PROCESS_TYPE]: localProcessProvider };
    },
    checker: (name, entry, env) =>
        (require("./health") as typeof import("./health")).localChecker({
            serverScript: LOCAL_SERVER_SCRIPT,
            stateDir: path.join(env.runDir, "local", env.stack),
        })(name, entry),
    goneCheck: (ctx) => (require("./gone") as typeof import("./gone")).localGoneCheck(ctx),
    // Local proxies of a stack share one directory whatever their entry: the first entry lists them all.
    collector: (name, entry, env) => (require("./gc") as typeof import("./gc")).localCollector(env.runDir)(name, entry),
    collectOncePerStack: true,
});
