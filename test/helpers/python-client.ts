/**
 * clients/python run for real: Debian's /usr/bin/python3 (the `python3` first on PATH may be pyenv's,
 * which does not see Debian's python3-scrapy), with the package on PYTHONPATH and a clean environment
 * (no HTTP_PROXY from the developer's shell). Also the loopback sites the crawls fetch.
 */
import { execFile } from "node:child_process";
import * as http from "node:http";
import * as path from "node:path";
import { promisify } from "node:util";
import { PACKAGE_ROOT } from "../../src/engine/env";

export const PYTHON = "/usr/bin/python3";
export const PY_CLIENT = path.join(PACKAGE_ROOT, "clients", "python");

/** Runs `python3 args…` in clients/python with `env` added; its stdout (throws with stderr's tail on failure). */
export async function python(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<string> {
    try {
        const { stdout } = await promisify(execFile)(PYTHON, args, {
            cwd: PY_CLIENT,
            env: { PATH: "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", PYTHONPATH: PY_CLIENT, ...env },
            timeout: timeoutMs,
            maxBuffer: 16 * 1024 * 1024,
        });
        return stdout;
    } catch (e) {
        const err = e as Error & { stderr?: string; stdout?: string };
        throw new Error(`${PYTHON} ${args.join(" ")}: ${err.message}\n${(err.stderr ?? "").slice(-3000)}`);
    }
}

/** `key value` lines (what the examples print) as a map. */
export function printed(stdout: string): Record<string, string> {
    return Object.fromEntries(
        stdout
            .trim()
            .split("\n")
            .map((l) => [l.slice(0, l.indexOf(" ")), l.slice(l.indexOf(" ") + 1)]),
    );
}

export interface Site {
    server: http.Server;
    port: number;
    url: string;
    /** Paths fetched with 200, in order. */
    served: string[];
    /** Paths answered 403. */
    refused: string[];
    close(): Promise<void>;
}

/**
 * A site of `pages` pages on `host`: `/` links to /p/1 … /p/<pages-1>. `refuse(req)` true answers 403
 * ("blocked") instead of the page.
 */
export async function startSite(
    host: string,
    pages: number,
    refuse: (req: http.IncomingMessage) => boolean = () => false,
): Promise<Site> {
    const served: string[] = [];
    const refused: string[] = [];
    const server = http.createServer((req, res) => {
        const p = req.url ?? "/";
        if (refuse(req)) {
            refused.push(p);
            res.writeHead(403, { "content-type": "text/plain" }).end("blocked");
            return;
        }
        served.push(p);
        const links =
            p === "/" ? Array.from({ length: pages - 1 }, (_, i) => `<a href="/p/${i + 1}">${i + 1}</a>`) : [];
        res.writeHead(200, { "content-type": "text/html" }).end(`<html><body>${p} ${links.join(" ")}</body></html>`);
    });
    await new Promise<void>((ok, fail) => server.once("error", fail).listen(0, host, ok));
    const port = (server.address() as { port: number }).port;
    return {
        server,
        port,
        url: `http://${host}:${port}/`,
        served,
        refused,
        close: async () => {
            server.closeAllConnections();
            await new Promise((r) => server.close(r));
        },
    };
}
