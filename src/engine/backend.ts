/**
 * Which Pulumi backend holds a stack's state: the one place that looks at PULUMI_BACKEND_URL's scheme.
 * Everything that reads state asks this first, so there is one choice between the file backend's fast
 * path (reading its files) and the engine (`pulumi stack export`), which works for every backend.
 */
import { maskUrlPasswords, redactUrl } from "../log/redact";
import type { EngineHome } from "./env";

/**
 * - `file`: a directory (`file://`); egress reads and repairs its files directly.
 * - `postgres`: Pulumi's PostgreSQL DIY backend (`postgres://`), a key/value table; each write is atomic.
 * - `other`: an object store (`s3://`, `gs://`, `azblob://`; each write is atomic) or Pulumi Cloud: egress
 *   reads state through the engine only.
 */
export type BackendKind = "file" | "postgres" | "other";

export interface StateBackend {
    kind: BackendKind;
    /** The URL as the engine gets it. It may carry a password: never log it, log `shown`. */
    url: string;
    /** The URL without its password, for messages and logs. */
    shown: string;
    /** `file` only: the backend's directory. */
    fileDir?: string;
}

/**
 * The backend in effect for these settings, with the precedence engineEnv applies: the extra env (a
 * test's, the service's `engineEnv`), then the process's (`--backend` sets it), then the home's file
 * backend.
 */
export function stateBackend(home: EngineHome, extraEnv: Record<string, string | undefined> = {}): StateBackend {
    return backendOfUrl(backendUrlFor(home, extraEnv));
}

export function backendOfUrl(url: string): StateBackend {
    const shown = withoutPassword(url);
    if (url.startsWith("file://")) return { kind: "file", url, shown, fileDir: url.slice("file://".length) };
    if (/^postgres(ql)?:\/\//.test(url)) return { kind: "postgres", url, shown };
    return { kind: "other", url, shown };
}

function backendUrlFor(home: EngineHome, extraEnv: Record<string, string | undefined>): string {
    return extraEnv.PULUMI_BACKEND_URL ?? process.env.PULUMI_BACKEND_URL ?? `file://${home.backendDir}`;
}

/** The URL without its password (`user:pass@` and a `password=` parameter), for messages and logs. */
export function withoutPassword(url: string): string {
    return redactUrl(maskUrlPasswords(url));
}

/**
 * The directory of a file:// backend in effect for these settings, or undefined for other backends
 * (callers that only ever read files: lock files, the doctor).
 */
export function fileBackendDir(
    home: EngineHome,
    extraEnv: Record<string, string | undefined> = {},
): string | undefined {
    return stateBackend(home, extraEnv).fileDir;
}
