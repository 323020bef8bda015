/**
 * Inline programs run in this process and talk to the engine over gRPC. When an update is cancelled (or
 * fails) the CLI exits while the program may still be registering resources, and those calls reject with
 * gRPC UNAVAILABLE/CANCELLED after nobody awaits them. Node turns such a rejection into a crash, which
 * would take the CLI or the whole service down for an outcome the driver already reported. This handler
 * drops exactly those (gRPC errors: a numeric `code` and `metadata`) and leaves every other unhandled
 * rejection to Node's default: a crash.
 */
let installed = false;

export function tolerateProgramDisconnects(onDropped: (message: string) => void): void {
    if (installed) return;
    installed = true;
    process.on("unhandledRejection", (reason) => {
        if (isEngineDisconnect(reason)) {
            onDropped(`the program's call to the engine ended with it: ${(reason as Error).message.split("\n")[0]}`);
            return;
        }
        // What Node would do without this handler: an uncaught error.
        setImmediate(() => {
            throw reason;
        });
    });
}

/** gRPC UNAVAILABLE (14) or CANCELLED (1), as @grpc/grpc-js reports them. */
export function isEngineDisconnect(reason: unknown): boolean {
    const e = reason as { code?: unknown; metadata?: unknown } | null;
    return typeof e === "object" && e !== null && (e.code === 14 || e.code === 1) && typeof e.metadata === "object";
}
