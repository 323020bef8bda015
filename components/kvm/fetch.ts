/**
 * Streamed image download with sha256 computed on the way (never buffered in memory). Plain functions
 * that `require` inside: serialized with the BaseImage provider.
 *
 * Opening the source is retried when the failure is transient (no answer, 408/429/5xx); a missing image
 * (404, a missing file) and other answers fail at once, as `[permanent]`. A download that breaks off
 * midway is not retried here: the whole create fails and the next `up` starts it again. The body runs
 * under the image's transfer deadlines (./transfer.ts): total (from Content-Length), minimum rate (no
 * Content-Length) and idle.
 */
import { classify, classifyHttp } from "../shared/errors";
import { defaultRetrySchedule, RetrySchedule, withRetry } from "../shared/retry";
import { deadlineError, TransferLimits, transferLimits, watchTransfer } from "./transfer";

export interface Downloaded {
    file: string;
    bytes: number;
    sha256: string;
}

export interface DownloadOptions {
    /** @default DEFAULT_TRANSFER_LIMITS */
    limits?: TransferLimits;
    /** How opening the source is retried. @default defaultRetrySchedule() */
    retry?: RetrySchedule;
    /** Config path of the image's `transfer` settings, named when a deadline is missed. @default "transfer" */
    where?: string;
}

/** Downloads `url` (http/https/file, follows up to 5 redirects) into `file`, hashing as it streams. */
export async function downloadTo(url: string, file: string, opts: DownloadOptions = {}): Promise<Downloaded> {
    const fs = require("node:fs") as typeof import("node:fs");
    const crypto = require("node:crypto") as typeof import("node:crypto");
    const { pipeline } = require("node:stream/promises") as typeof import("node:stream/promises");
    const { Transform } = require("node:stream") as typeof import("node:stream");
    const limits = transferLimits(opts.limits);
    const where = opts.where ?? "transfer";
    const hash = crypto.createHash("sha256");
    const source = await withRetry(() => openSource(url, limits, where, 5), {
        schedule: opts.retry ?? defaultRetrySchedule(),
        retryable: (e) => (e as { errorClass?: string }).errorClass === "transient",
    });
    const watch = watchTransfer(`image url ${url}: the download`, source.bytes, limits, where);
    const stop = new AbortController();
    void watch.failure.then((e) => stop.abort(e));
    let bytes = 0;
    const tap = new Transform({
        transform(chunk, _enc, cb) {
            hash.update(chunk);
            bytes += chunk.length;
            watch.progress(chunk.length);
            cb(null, chunk);
        },
    });
    try {
        await pipeline(source.stream, tap, fs.createWriteStream(file, { mode: 0o600 }), { signal: stop.signal });
    } catch (e) {
        if (stop.signal.aborted) throw stop.signal.reason;
        throw (e as { errorClass?: string }).errorClass
            ? e
            : classify(new Error(`image url ${url}: the download broke off: ${(e as Error).message}`), "transient");
    } finally {
        watch.stop();
    }
    return { file, bytes, sha256: hash.digest("hex") };
}

/** The body and its size when known (Content-Length, or the file's size). */
async function openSource(
    url: string,
    limits: TransferLimits,
    where: string,
    redirects: number,
): Promise<{ stream: NodeJS.ReadableStream; bytes?: number }> {
    const fs = require("node:fs") as typeof import("node:fs");
    const { URL, fileURLToPath } = require("node:url") as typeof import("node:url");
    const u = new URL(url);
    if (u.protocol === "file:") {
        const p = fileURLToPath(u);
        if (!fs.existsSync(p)) throw classify(new Error(`image url ${url}: file ${p} does not exist`), "permanent");
        return { stream: fs.createReadStream(p), bytes: fs.statSync(p).size };
    }
    if (u.protocol !== "http:" && u.protocol !== "https:")
        throw classify(
            new Error(`image url ${url}: unsupported scheme ${u.protocol} (use https, http or file)`),
            "permanent",
        );
    const mod = (u.protocol === "https:" ? require("node:https") : require("node:http")) as typeof import("node:http");
    const started = Date.now();
    return new Promise((resolve, reject) => {
        const req = mod.get(u, { timeout: limits.idleSeconds * 1000 }, (res) => {
            const code = res.statusCode ?? 0;
            if (code >= 300 && code < 400 && res.headers.location) {
                res.resume();
                if (redirects <= 0)
                    return reject(classify(new Error(`image url ${url}: too many redirects`), "permanent"));
                return resolve(openSource(new URL(res.headers.location, u).toString(), limits, where, redirects - 1));
            }
            if (code !== 200) {
                res.resume();
                return reject(
                    classify(
                        new Error(`image url ${url}: HTTP ${code}${code === 404 ? " (no image there)" : ""}`),
                        classifyHttp(code),
                    ),
                );
            }
            req.setTimeout(0); // from here the watch in downloadTo keeps every deadline, idle included
            const length = Number(res.headers["content-length"]);
            resolve({ stream: res, bytes: Number.isFinite(length) && length >= 0 ? length : undefined });
        });
        // Until the answer comes, the socket's idle timer is the idle deadline.
        req.on("timeout", () =>
            req.destroy(deadlineError(`image url ${url}`, "idle", limits, { elapsedMs: Date.now() - started }, where)),
        );
        req.on("error", (e) =>
            reject(
                (e as { errorClass?: string }).errorClass
                    ? e
                    : classify(
                          new Error(e.message.startsWith("image url ") ? e.message : `image url ${url}: ${e.message}`),
                          "transient",
                      ),
            ),
        );
    });
}
