/**
 * Deadlines for the long byte transfers of a base image: the download from its mirror and the
 * `vol-upload`/`vol-download` to and from the host. While one runs, the stack's engine operation and its
 * writer lock are held (scale and heal wait), so none may run unbounded: a mirror that drips a byte a
 * second, or a host that vanished mid-upload, must fail in minutes, not hours.
 *
 * A transfer of N bytes has a total deadline of `graceSeconds + N / minKiBPerSecond`; a transfer whose
 * size is not known up front (an HTTP answer without Content-Length) fails once its average rate since
 * the grace ended is below the minimum; and no transfer may go `idleSeconds` without a byte. Every miss
 * is `[transient]` (the next `up` tries again) and names the deadline and the config field that sets it.
 *
 * Self-contained apart from components/shared/errors: serialized with the BaseImage provider.
 */
import { classify } from "../shared/errors";

/** An image entry's `transfer` settings (components/kvm/config.ts), as the BaseImage provider gets them. */
export interface TransferLimits {
    /** Slowest average rate accepted, KiB/s. */
    minKiBPerSecond: number;
    /** Added to every total deadline (connection set-up, a slow start), seconds. */
    graceSeconds: number;
    /** Longest wait without a byte, seconds (downloads; uploads and verifications run as one virsh call). */
    idleSeconds: number;
}

/**
 * The defaults: a 600 MB cloud image may take 20 minutes (512 KiB/s) plus a minute; two minutes
 * without a byte is a stall. Before deadlines, only a 30-minute idle timeout and a 60-minute kill existed.
 */
export const DEFAULT_TRANSFER_LIMITS: TransferLimits = { minKiBPerSecond: 512, graceSeconds: 60, idleSeconds: 120 };

/** The limits with defaults for unset fields (state written before deadlines existed has none). */
export function transferLimits(given?: Partial<TransferLimits>): TransferLimits {
    const d = DEFAULT_TRANSFER_LIMITS;
    return {
        minKiBPerSecond: given?.minKiBPerSecond ?? d.minKiBPerSecond,
        graceSeconds: given?.graceSeconds ?? d.graceSeconds,
        idleSeconds: given?.idleSeconds ?? d.idleSeconds,
    };
}

/** The total deadline of a transfer of `bytes` bytes, in ms. */
export function totalDeadlineMs(bytes: number, limits: TransferLimits): number {
    return Math.ceil(limits.graceSeconds * 1000 + (bytes / (limits.minKiBPerSecond * 1024)) * 1000);
}

/** Which deadline passed, for messages and tests. */
export type DeadlineKind = "total" | "rate" | "idle";

/**
 * The error for a missed deadline: `[transient] <what>: missed its <which> deadline (<rule>) <progress>;
 * <hint>`. `where` is the config path of the image's `transfer` settings.
 */
export function deadlineError(
    what: string,
    kind: DeadlineKind,
    limits: TransferLimits,
    facts: { bytes?: number; done?: number; elapsedMs: number },
    where: string,
): Error {
    const mib = (n: number) => `${(n / 1024 ** 2).toFixed(1)} MiB`;
    const rule =
        kind === "total"
            ? `total deadline of ${(totalDeadlineMs(facts.bytes ?? 0, limits) / 1000).toFixed(0)} s: ${mib(facts.bytes ?? 0)} at the minimum ${limits.minKiBPerSecond} KiB/s plus ${limits.graceSeconds} s grace`
            : kind === "rate"
              ? `minimum-rate deadline: below ${limits.minKiBPerSecond} KiB/s on average after ${limits.graceSeconds} s grace`
              : `idle deadline: no byte for ${limits.idleSeconds} s`;
    const progress =
        facts.done !== undefined
            ? `, ${mib(facts.done)}${facts.bytes !== undefined ? ` of ${mib(facts.bytes)}` : ""} moved in ${(facts.elapsedMs / 1000).toFixed(1)} s`
            : ` after ${(facts.elapsedMs / 1000).toFixed(1)} s`;
    const field = kind === "total" || kind === "rate" ? "minKiBPerSecond`/`graceSeconds" : "idleSeconds";
    return classify(
        new Error(
            `${what}: missed its ${rule}${progress}; the next up tries again (a slower source needs \`${where}.${field}\`)`,
        ),
        "transient",
    );
}

/**
 * Watches a stream of known or unknown size: call `progress(n)` per chunk; `failure` resolves with the
 * error of the first deadline missed (then the caller destroys the transfer). `stop()` ends the watch.
 */
export function watchTransfer(
    what: string,
    bytes: number | undefined,
    limits: TransferLimits,
    where: string,
): { progress(n: number): void; failure: Promise<Error>; stop(): void } {
    const started = Date.now();
    let done = 0;
    let last = started;
    let fail!: (e: Error) => void;
    const failure = new Promise<Error>((r) => (fail = r));
    const check = () => {
        const now = Date.now();
        const elapsedMs = now - started;
        if (bytes !== undefined && elapsedMs > totalDeadlineMs(bytes, limits))
            return fail(deadlineError(what, "total", limits, { bytes, done, elapsedMs }, where));
        if (bytes === undefined && elapsedMs > totalDeadlineMs(done, limits))
            return fail(deadlineError(what, "rate", limits, { done, elapsedMs }, where));
        if (now - last > limits.idleSeconds * 1000)
            return fail(deadlineError(what, "idle", limits, { bytes, done, elapsedMs }, where));
    };
    // A quarter of the shortest limit, at most a second: a miss is seen within about a second.
    const timer = setInterval(
        check,
        Math.max(10, Math.min(1000, (Math.min(limits.graceSeconds || 1, limits.idleSeconds) * 1000) / 4)),
    );
    return {
        progress(n) {
            done += n;
            last = Date.now();
        },
        failure,
        stop: () => clearInterval(timer),
    };
}
