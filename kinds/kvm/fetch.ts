/**
 * Streamed image download with sha256 computed on the way (never buffered in memory). Plain functions
 * that `require` inside: serialized with the BaseImage provider.
 *
 * Opening the source is retried when the failure is transient (no answer, 408/429/5xx); a missing image
 * (404, a missing file) and other answers fail at once, as `[permanent]`. A download that breaks off
 * midway is not retried here: the whole create fails and the next `up` starts it again.
 */
import { classify, classifyHttp } from "../shared/errors";
import { defaultRetrySchedule, RetrySchedule, withRetry } from "../shared/retry";

export interface Downloaded {
    file: string;
    bytes: number;
    sha256: string;
}

/** Downloads `url` (http/https/file, follows up to 5 redirects) into `file`, hashing as it streams. */
export async function downloadTo(url: string, file: string, timeoutMs = 30 * 60 * 1000, retry?: RetrySchedule): Promise<Downloaded> {
    const fs = require("node:fs") as typeof import("node:fs");
    const crypto = require("node:crypto") as typeof import("node:crypto");
    const { pipeline } = require("node:stream/promises") as typeof import("node:stream/promises");
    const { Transform } = require("node:stream") as typeof import("node:stream");
    const hash = crypto.createHash("sha256");
    let bytes = 0;
    const tap = new Transform({
        transform(chunk, _enc, cb) {
            hash.update(chunk);
            bytes += chunk.length;
            cb(null, chunk);
        },
    });
    const source = await withRetry(() => openSource(url, timeoutMs, 5), { schedule: retry ?? defaultRetrySchedule(), retryable: (e) => (e as { errorClass?: string }).errorClass === "transient" });
    await pipeline(source, tap, fs.createWriteStream(file, { mode: 0o600 }));
    return { file, bytes, sha256: hash.digest("hex") };
}

async function openSource(url: string, timeoutMs: number, redirects: number): Promise<NodeJS.ReadableStream> {
    const fs = require("node:fs") as typeof import("node:fs");
    const { URL, fileURLToPath } = require("node:url") as typeof import("node:url");
    const u = new URL(url);
    if (u.protocol === "file:") {
        const p = fileURLToPath(u);
        if (!fs.existsSync(p)) throw classify(new Error(`image url ${url}: file ${p} does not exist`), "permanent");
        return fs.createReadStream(p);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw classify(new Error(`image url ${url}: unsupported scheme ${u.protocol} (use https, http or file)`), "permanent");
    const mod = (u.protocol === "https:" ? require("node:https") : require("node:http")) as typeof import("node:http");
    return new Promise((resolve, reject) => {
        const req = mod.get(u, { timeout: timeoutMs }, (res) => {
            const code = res.statusCode ?? 0;
            if (code >= 300 && code < 400 && res.headers.location) {
                res.resume();
                if (redirects <= 0) return reject(classify(new Error(`image url ${url}: too many redirects`), "permanent"));
                return resolve(openSource(new URL(res.headers.location, u).toString(), timeoutMs, redirects - 1));
            }
            if (code !== 200) {
                res.resume();
                return reject(classify(new Error(`image url ${url}: HTTP ${code}${code === 404 ? " (no image there)" : ""}`), classifyHttp(code)));
            }
            resolve(res);
        });
        // The same error reaches a body already handed to the caller (a stall midway), so it names the URL itself.
        req.on("timeout", () => req.destroy(new Error(`image url ${url}: timed out`)));
        req.on("error", (e) => reject(classify(new Error(e.message.startsWith("image url ") ? e.message : `image url ${url}: ${e.message}`), "transient")));
    });
}
