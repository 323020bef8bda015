/**
 * The real service the API contract is checked on (test/service/openapi.test.ts, openapi-document.test.ts):
 * local proxies and the real engine, a pool `web` of 2 members (at most 4, 1 s cooldown) and the gateway.
 * `withOpenApiService` starts it before the file's tests, with its /v1/openapi.json read, and closes it
 * after; `set` hands both to the file's variables once they exist. Its `call` is a real request whose
 * answer is checked against that document; `seen` records what was answered and validated.
 */
import { after, before } from "node:test";
import assert from "node:assert/strict";
import { settledConverge, startTestService, TestService, TOKENS } from "./service";
import { OpenApiDoc, responseSchema, validate } from "./openapi-check";
import { waitFor } from "./harness";

const config = {
    "egress:providers": { local: { type: "local" } },
    "egress:pools": [{ name: "web", provider: "local", replicas: 2, maxReplicas: 4, cooldownSeconds: 1 }],
};

type Answer = { status: number; headers: Headers; text: string; body: any };

export function withOpenApiService(set: (made: { svc: TestService; doc: OpenApiDoc }) => void) {
    let svc: TestService;
    let doc: OpenApiDoc;
    /** operationId → statuses answered for real and validated. */
    const seen = new Map<string, Set<number>>();

    before(async () => {
        svc = await startTestService(config, { probeIntervalMs: 300, gateway: { port: 0 } });
        await settledConverge(svc);
        await waitFor(
            "2 healthy",
            async () => (await svc.call("GET", "/v1/proxies?state=healthy")).body.proxies.length === 2,
            20_000,
        );
        doc = (await fetch(`${svc.url}/v1/openapi.json`).then((r) => r.json())) as OpenApiDoc;
        set({ svc, doc });
    });
    after(async () => {
        await svc?.close();
    });

    /** A real request, then its answer checked against the document. */
    async function call(
        method: string,
        path: string,
        opts: { token?: string | null; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> } = {},
    ): Promise<Answer> {
        const headers: Record<string, string> = { ...(opts.headers ?? {}) };
        const token = opts.token === undefined ? TOKENS.admin : opts.token;
        if (token) headers.authorization = `Bearer ${token}`;
        const body = opts.body !== undefined ? JSON.stringify(opts.body) : opts.raw;
        if (body !== undefined) headers["content-type"] ??= "application/json";
        const res = await fetch(`${svc.url}${path}`, { method, headers, body });
        const text = await res.text();
        const r: Answer = { status: res.status, headers: res.headers, text, body: undefined };
        const found = responseSchema(doc, method, path, res.status, res.headers.get("content-type") ?? "");
        assert.ok(!("problem" in found), `${"problem" in found ? found.problem : ""}: ${text.slice(0, 300)}`);
        if (res.headers.get("content-type")?.startsWith("application/json")) {
            r.body = JSON.parse(text);
            const problems = validate(doc, found.schema!, r.body);
            assert.deepEqual(
                problems,
                [],
                `${method} ${path} ${res.status} does not match the document: ${text.slice(0, 500)}`,
            );
        } else if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
            const events = parseSse(text);
            for (const e of events)
                assert.deepEqual(
                    validate(doc, found.itemSchema!, e.data),
                    [],
                    `${e.type} event ${e.id} does not match the document`,
                );
            r.body = events;
        }
        let statuses = seen.get(found.op);
        if (!statuses) seen.set(found.op, (statuses = new Set()));
        statuses.add(res.status);
        return r;
    }

    return { call, seen };
}

function parseSse(text: string): { type: string; id: number; data: any }[] {
    return text
        .split("\n\n")
        .filter((b) => b.trim() && !b.startsWith(":"))
        .map((b) => {
            const field = (name: string) => new RegExp(`^${name}: (.*)$`, "m").exec(b)?.[1];
            assert.ok(field("id"), `every event has an id: ${b}`);
            return { type: field("event")!, id: Number(field("id")), data: JSON.parse(field("data")!) };
        });
}
