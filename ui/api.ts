/**
 * Talking to /v1: the token lives in sessionStorage (gone with the tab, never in a URL) and goes out as
 * a Bearer header. Errors become ApiError with the server's readable message; a 401 also drops the
 * token and tells the app to show the login page.
 */
const KEY = "egress.token";

export class ApiError extends Error {
    constructor(
        readonly status: number,
        readonly code: string,
        message: string,
    ) {
        super(message);
    }
}

let onUnauthorized: () => void = () => undefined;
export const setOnUnauthorized = (fn: () => void) => (onUnauthorized = fn);

export const token = {
    get: () => sessionStorage.getItem(KEY) ?? undefined,
    set: (t: string) => sessionStorage.setItem(KEY, t),
    clear: () => sessionStorage.removeItem(KEY),
};

async function send(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json" };
    const t = token.get();
    if (t) headers.authorization = `Bearer ${t}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
        res = await fetch(path, {
            method,
            headers,
            body: body === undefined ? undefined : JSON.stringify(body),
            signal,
            cache: "no-store",
        });
    } catch (e) {
        if ((e as Error).name === "AbortError") throw e;
        throw new ApiError(0, "network", `cannot reach the egress service (${(e as Error).message})`);
    }
    if (res.ok) return res;
    let code = "http_" + res.status,
        message = `${method} ${path} answered ${res.status} ${res.statusText}`;
    try {
        const b = await res.json();
        if (b?.error?.message) ({ code, message } = b.error);
    } catch {
        /* not JSON: keep the status line */
    }
    if (res.status === 401) {
        token.clear();
        onUnauthorized();
    }
    throw new ApiError(res.status, code, message);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await send(method, path, body)).json() as Promise<T>;
}

/**
 * Follows an operation's Server-Sent Events. EventSource cannot send an Authorization header (and the
 * token must never go in the URL), so this reads the stream with fetch and parses the frames itself.
 */
export async function followEvents(
    opId: string,
    onEvent: (type: string, data: any) => void,
    signal: AbortSignal,
): Promise<void> {
    const res = await send("GET", `/v1/operations/${encodeURIComponent(opId)}/events`, undefined, signal);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
            const frame = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let type = "message",
                data = "";
            for (const line of frame.split("\n")) {
                if (line.startsWith("event:")) type = line.slice(6).trim();
                else if (line.startsWith("data:")) data += line.slice(5).trim();
            }
            if (data) onEvent(type, JSON.parse(data));
        }
    }
}
