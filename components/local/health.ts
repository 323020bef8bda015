import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import type { LocalProviderConfig } from "./config";
import type { Checker, CheckerFactory, CheckVerdict } from "../kind";

/** Where the local provider's pieces live; the service passes egress's own paths. */
export interface LocalCheckerOptions {
    serverScript: string;
    stateDir: string;
}

/**
 * The local provider works when the proxy server script is built, the state dir is writable and a
 * loopback port can be bound. One target: `localhost`.
 */
export const localChecker =
    (opts: LocalCheckerOptions): CheckerFactory<LocalProviderConfig> =>
    (providerName, entry): Checker => ({
        provider: providerName,
        kind: "local",
        async check(): Promise<CheckVerdict[]> {
            const fail = (stage: string, message: string): CheckVerdict[] => [
                { target: "localhost", ok: false, stage, message },
            ];
            if (!fs.existsSync(opts.serverScript))
                return fail("build", `proxy server ${opts.serverScript} is missing; run \`npm run build\``);
            try {
                fs.mkdirSync(opts.stateDir, { recursive: true });
                fs.accessSync(opts.stateDir, fs.constants.W_OK);
            } catch (e) {
                return fail("state-dir", `cannot write ${opts.stateDir}: ${(e as Error).message}`);
            }
            const port = entry.basePort ?? 0;
            const bound = await new Promise<string | undefined>((resolve) => {
                const s = net.createServer();
                s.once("error", (e) => resolve((e as Error).message));
                s.listen(0, "127.0.0.1", () => s.close(() => resolve(undefined)));
            });
            if (bound) return fail("bind", `cannot bind a loopback port: ${bound}`);
            const running = fs
                .readdirSync(opts.stateDir, { recursive: true })
                .filter((f) => String(f).endsWith(".json")).length;
            return [
                {
                    target: "localhost",
                    ok: true,
                    message: "proxy server built, state dir writable, loopback bindable",
                    details: {
                        stateDir: path.resolve(opts.stateDir),
                        basePort: port || undefined,
                        runningProxies: running,
                    },
                },
            ];
        },
    });
