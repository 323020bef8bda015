/**
 * The environment engine processes get: an allow-list, not the service's whole environment. The
 * service holds API tokens (`EGRESS_TOKENS`) and an operator's shell may hold anything; the Pulumi CLI
 * and its plugins need only what locates things, reaches providers and configures Pulumi itself.
 */

/** Exact names passed through. */
const NAMES = new Set([
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "TERM",
    "NO_COLOR",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSH_AUTH_SOCK",
    "KUBECONFIG",
    // Go runtime knobs the CLI honours (tests set none; operators may need GODEBUG for TLS quirks).
    "GODEBUG",
    "GOMAXPROCS",
    // The providers' retry schedule (components/shared/retry.ts): dynamic providers run in the engine's plugin.
    "EGRESS_RETRY_SCHEDULE",
    // The program validates the stack config too: a test's lowered rotation floor must hold there (src/config/load.ts).
    "EGRESS_TEST_MIN_ROTATE_SECONDS",
]);

/**
 * Prefixes passed through: Pulumi's own settings (backend, passphrase, home), cloud credentials the
 * providers read (GOOGLE_APPLICATION_CREDENTIALS, CLOUDSDK_*), locale and XDG paths.
 */
const PREFIXES = ["PULUMI_", "GOOGLE_", "CLOUDSDK_", "LC_", "XDG_"];

/** True when `name` may reach an engine process. */
export function allowedInChild(name: string): boolean {
    return NAMES.has(name) || PREFIXES.some((p) => name.startsWith(p));
}

/** `env` reduced to the allow-list (undefined values dropped). */
export function childEnv(env: NodeJS.ProcessEnv): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(env)) if (v !== undefined && allowedInChild(k)) out[k] = v;
    return out;
}
