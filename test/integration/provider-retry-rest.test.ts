/**
 * The GCE and Kubernetes REST clients sort failures into transient (retried), permanent and quota (not
 * retried), against a real HTTP server on 127.0.0.1 that answers from a script and counts the calls.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { GcpApiError, GcpComputeClient } from "../../components/gcp/api";
import { KubeApiError, KubeClient } from "../../components/kubernetes/api";
import { errorClassOf } from "../../components/shared/errors";
import type { RetrySchedule } from "../../components/shared/retry";
import { closedPort } from "../fixtures/ports";

/** One scripted answer: status and JSON body. The last one repeats once the script runs out. */
type Answer = { status: number; body: unknown };

let server: http.Server;
let url: string;
let script: Answer[] = [];
let calls: { method: string; path: string }[] = [];

before(async () => {
    server = http.createServer((req, res) => {
        calls.push({ method: req.method!, path: req.url! });
        const a = script.length > 1 ? script.shift()! : script[0];
        res.writeHead(a.status, { "content-type": "application/json" });
        res.end(JSON.stringify(a.body));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise((r) => server.close(r)));

const retry: RetrySchedule = { tries: 4, firstDelayMs: 5, maxDelayMs: 20, maxTotalMs: 5000 };

/** Google's and Kubernetes' error bodies. */
const google = (code: number, message: string, reason: string) => ({
    error: { code, message, errors: [{ message, domain: "global", reason }], status: "X" },
});
const status = (code: number, message: string, reason: string) => ({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message,
    reason,
    code,
});

const gce = () =>
    new GcpComputeClient("crawl-proxies", {
        endpoint: url,
        accessToken: "ya29.t",
        env: {},
        homeDir: "/nonexistent",
        timeoutMs: 2000,
        retry,
    });
const kube = () =>
    new KubeClient(
        { context: "test", server: url, credentials: async () => ({ token: "t" }) },
        { timeoutMs: 2000, retry },
    );

function reset(answers: Answer[]): void {
    script = answers;
    calls = [];
}

describe("GCE client", () => {
    it("retries 429 and 503, then succeeds", async () => {
        reset([
            { status: 429, body: google(429, "Rate Limit Exceeded", "rateLimitExceeded") },
            { status: 503, body: google(503, "unavailable", "backendError") },
            { status: 200, body: { items: [{ name: "a" }] } },
        ]);
        const page = await gce().get("zones/europe-west1-b/instances");
        assert.deepEqual(page, { items: [{ name: "a" }] });
        assert.equal(calls.length, 3);
        assert.ok(calls.every((c) => c.path === "/compute/v1/projects/crawl-proxies/zones/europe-west1-b/instances"));
    });

    it("gives up on a lasting 500 after the schedule's tries, naming class, call and target", async () => {
        reset([{ status: 500, body: google(500, "Internal error", "backendError") }]);
        await assert.rejects(gce().get("zones/europe-west1-b/instances"), (e: GcpApiError) => {
            assert.equal(e.errorClass, "transient");
            assert.equal(errorClassOf(e.message), "transient");
            assert.match(
                e.message,
                /^\[transient\] GET zones\/europe-west1-b\/instances: HTTP 500: Internal error \(gave up after 4 tries in \d+\.\d s\)$/,
            );
            return true;
        });
        assert.equal(calls.length, 4);
    });

    it("reports 403 QUOTA_EXCEEDED as quota after one call", async () => {
        reset([
            {
                status: 403,
                body: google(403, "Quota 'CPUS' exceeded. Limit: 8.0 in region europe-west1.", "QUOTA_EXCEEDED"),
            },
        ]);
        await assert.rejects(gce().get("zones/europe-west1-b/instances"), (e: GcpApiError) => {
            assert.deepEqual([e.errorClass, e.stage, e.status], ["quota", "quota", 403]);
            assert.match(e.message, /^\[quota\] GET zones\/europe-west1-b\/instances: HTTP 403: Quota 'CPUS' exceeded/);
            return true;
        });
        assert.equal(calls.length, 1);
    });

    it("fails fast on 401 (permanent) and on a missing image (404)", async () => {
        reset([{ status: 401, body: google(401, "Request had invalid authentication credentials.", "authError") }]);
        await assert.rejects(gce().get("zones/europe-west1-b/instances"), {
            errorClass: "permanent",
            stage: "credentials",
            message: /^\[permanent\] GET zones\/europe-west1-b\/instances: HTTP 401: Request had invalid/,
        });
        assert.equal(calls.length, 1);
        reset([
            {
                status: 404,
                body: google(
                    404,
                    "The resource 'projects/debian-cloud/global/images/debian-99' was not found",
                    "notFound",
                ),
            },
        ]);
        await assert.rejects(gce().get("global/images/debian-99"), {
            errorClass: "permanent",
            stage: "not-found",
            message: /^\[permanent\] .*debian-99' was not found/,
        });
        assert.equal(calls.length, 1);
    });

    it("retries a refused connection, then fails as transient", async () => {
        const closed = new GcpComputeClient("p", {
            endpoint: `http://127.0.0.1:${await closedPort()}`,
            accessToken: "t",
            env: {},
            homeDir: "/nonexistent",
            retry: { ...retry, tries: 3 },
        });
        await assert.rejects(closed.get("zones/z/instances"), {
            errorClass: "transient",
            status: 0,
            message: /^\[transient\] GET zones\/z\/instances: .*ECONNREFUSED.*\(gave up after 3 tries/,
        });
    });
});

describe("Kubernetes client", () => {
    it("retries 429 and 503, then succeeds", async () => {
        reset([
            { status: 429, body: status(429, "too many requests", "TooManyRequests") },
            { status: 503, body: status(503, "unavailable", "ServiceUnavailable") },
            { status: 200, body: { kind: "PodList", items: [] } },
        ]);
        assert.deepEqual(await kube().get("/api/v1/namespaces/egress/pods"), { kind: "PodList", items: [] });
        assert.equal(calls.length, 3);
    });

    it("gives up on a lasting 500 after the schedule's tries, naming class, call and target", async () => {
        reset([{ status: 500, body: status(500, "Internal error occurred: etcd", "InternalError") }]);
        await assert.rejects(kube().get("/api/v1/namespaces/egress/pods"), (e: KubeApiError) => {
            assert.equal(e.errorClass, "transient");
            assert.match(
                e.message,
                /^\[transient\] GET \/api\/v1\/namespaces\/egress\/pods: HTTP 500: Internal error occurred: etcd \(gave up after 4 tries in \d+\.\d s\)$/,
            );
            return true;
        });
        assert.equal(calls.length, 4);
    });

    it("reports 403 `exceeded quota` as quota after one call", async () => {
        const msg =
            'pods "web-0" is forbidden: exceeded quota: compute-resources, requested: cpu=1, used: cpu=4, limited: cpu=4';
        reset([{ status: 403, body: status(403, msg, "Forbidden") }]);
        await assert.rejects(kube().get("/api/v1/namespaces/egress/pods"), {
            errorClass: "quota",
            stage: "quota",
            message:
                /^\[quota\] GET \/api\/v1\/namespaces\/egress\/pods: HTTP 403: pods "web-0" is forbidden: exceeded quota/,
        });
        assert.equal(calls.length, 1);
    });

    it("fails fast on 401 and on a plain 403 (permanent)", async () => {
        reset([{ status: 401, body: status(401, "Unauthorized", "Unauthorized") }]);
        await assert.rejects(kube().get("/api/v1/namespaces/egress/pods"), {
            errorClass: "permanent",
            stage: "credentials",
            message: /^\[permanent\] GET .*HTTP 401: Unauthorized$/,
        });
        assert.equal(calls.length, 1);
        reset([
            { status: 403, body: status(403, 'pods is forbidden: User "ci" cannot list resource "pods"', "Forbidden") },
        ]);
        await assert.rejects(kube().get("/api/v1/namespaces/egress/pods"), { errorClass: "permanent", stage: "rbac" });
        assert.equal(calls.length, 1);
    });

    it("a DELETE retried after a 503 that finds the object gone counts as deleted", async () => {
        reset([
            { status: 503, body: status(503, "unavailable", "ServiceUnavailable") },
            { status: 404, body: status(404, 'pods "x" not found', "NotFound") },
        ]);
        assert.equal(await kube().delete("/api/v1/namespaces/egress/pods/x"), false);
        assert.deepEqual(
            calls.map((c) => c.method),
            ["DELETE", "DELETE"],
        );
    });
});
