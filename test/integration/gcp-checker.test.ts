import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FakeCompute, startFakeCompute } from "../fixtures/gcp/fake-compute";
import { gcpChecker } from "../../components/gcp/health";
import { parseEgressConfig } from "../../src/config";
import type { GcpProviderConfig } from "../../components/gcp/config";

const TOKEN = "ya29.test-token";
let fake: FakeCompute;
const emptyHome = fs.mkdtempSync(path.join(os.tmpdir(), "egress-gcp-home-"));
const entry = parseEgressConfig(
    {
        providers: {
            "gcp-eu": {
                type: "gcp",
                project: "crawl-proxies",
                zones: ["europe-west1-b", "europe-west1-c"],
                allowedSourceRanges: ["203.0.113.0/24"],
            },
        },
    },
    "/",
).providers["gcp-eu"] as GcpProviderConfig;

/** Options that never read the developer's real credentials; transient failures are tried twice, 10 ms apart. */
const opts = (extra: Record<string, unknown> = {}) => ({
    endpoint: fake.url,
    env: {},
    homeDir: emptyHome,
    accessToken: TOKEN,
    timeoutMs: 2000,
    retry: { tries: 2, firstDelayMs: 10, maxDelayMs: 10, maxTotalMs: 5000 },
    ...extra,
});

before(async () => {
    fake = await startFakeCompute("crawl-proxies", TOKEN);
});
after(() => fake.close());

describe("gcp checker", () => {
    it("lists at most one managed instance per zone and reports each zone ok", async () => {
        fake.instances.push({
            kind: "compute#instance",
            name: "web-0-vm-1a2b",
            zone: "https://www.googleapis.com/compute/v1/projects/crawl-proxies/zones/europe-west1-b",
            labels: { "egress-project": "egress" },
            status: "RUNNING",
        });
        fake.requests.length = 0;
        const verdicts = await gcpChecker("gcp-eu", entry, opts()).check();
        assert.deepEqual(
            verdicts.map((v) => [v.target, v.ok]),
            [
                ["zone/europe-west1-b", true],
                ["zone/europe-west1-c", true],
            ],
        );
        assert.equal(verdicts[0].details?.managedInstancesSeen, 1);
        assert.equal(verdicts[1].details?.managedInstancesSeen, 0);
        const req = fake.requests.find((r) => r.path.endsWith("/zones/europe-west1-b/instances"))!;
        assert.equal(req.query.get("maxResults"), "1");
        assert.equal(req.query.get("filter"), '(labels.egress-project = "egress")');
        assert.equal(req.auth, `Bearer ${TOKEN}`);
    });

    it("reports rejected credentials (401) at stage `credentials`", async () => {
        const [v] = await gcpChecker("gcp-eu", entry, opts({ accessToken: "ya29.expired" })).check();
        assert.equal(v.ok, false);
        assert.equal(v.stage, "credentials");
        assert.match(
            v.message,
            /^provider `gcp-eu`, project crawl-proxies, zone europe-west1-b: \[permanent\] GET zones\/europe-west1-b\/instances: HTTP 401: Request had invalid authentication credentials/,
        );
        assert.doesNotMatch(v.message, /ya29/);
    });

    it("tells a disabled Compute API from missing permissions (both 403)", async () => {
        fake.fail = [
            {
                match: /europe-west1-b/,
                status: 403,
                reason: "accessNotConfigured",
                message: "Compute Engine API has not been used in project 123 before or it is disabled.",
            },
            {
                match: /europe-west1-c/,
                status: 403,
                reason: "forbidden",
                message: "Required 'compute.instances.list' permission for 'projects/crawl-proxies'",
            },
        ];
        const [b, c] = await gcpChecker("gcp-eu", entry, opts()).check();
        assert.equal(b.stage, "api-disabled");
        assert.match(b.message, /gcloud services enable compute\.googleapis\.com --project crawl-proxies/);
        assert.equal(c.stage, "permissions");
        assert.match(c.message, /Required 'compute\.instances\.list' permission/);
        fake.fail = [];
    });

    it("reports 5xx and timeouts at stage `api`, per zone", async () => {
        fake.fail = [
            { match: /europe-west1-b/, status: 503, message: "The service is currently unavailable." },
            { match: /europe-west1-c/, status: "hang" },
        ];
        const started = Date.now();
        const [b, c] = await gcpChecker("gcp-eu", entry, opts({ timeoutMs: 300 })).check();
        assert.ok(Date.now() - started < 2000);
        assert.deepEqual([b.ok, b.stage], [false, "api"]);
        assert.match(
            b.message,
            /\[transient\] GET zones\/europe-west1-b\/instances: HTTP 503: The service is currently unavailable.* \(gave up after 2 tries in /,
        );
        assert.deepEqual([c.ok, c.stage], [false, "api"]);
        assert.match(c.message, /timed out after 300ms/);
        fake.fail = [];
    });

    it("without any credentials says how to provide them", async () => {
        const [v] = await gcpChecker("gcp-eu", entry, opts({ accessToken: undefined })).check();
        assert.equal(v.stage, "credentials");
        assert.match(v.message, /no GCP credentials found: run `gcloud auth application-default login`/);
    });

    it("exchanges a service-account key for a token with a signed JWT", async () => {
        const { privateKey, publicKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
        const keyFile = path.join(emptyHome, "sa.json");
        const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
        fs.writeFileSync(
            keyFile,
            JSON.stringify({
                type: "service_account",
                client_email: "egress@crawl-proxies.iam.gserviceaccount.com",
                private_key: pem,
                token_uri: `${fake.url}/token`,
            }),
        );
        let claims: any;
        fake.tokenHandler = (form) => {
            const [h, c, s] = form.get("assertion")!.split(".");
            const valid = crypto.verify("RSA-SHA256", Buffer.from(`${h}.${c}`), publicKey, Buffer.from(s, "base64url"));
            claims = JSON.parse(Buffer.from(c, "base64url").toString());
            const ok = valid && form.get("grant_type") === "urn:ietf:params:oauth:grant-type:jwt-bearer";
            return ok
                ? { status: 200, body: { access_token: TOKEN, expires_in: 3599, token_type: "Bearer" } }
                : { status: 400, body: { error: "invalid_grant" } };
        };
        const verdicts = await gcpChecker(
            "gcp-eu",
            entry,
            opts({ accessToken: undefined, env: { GOOGLE_APPLICATION_CREDENTIALS: keyFile } }),
        ).check();
        assert.deepEqual(
            verdicts.map((v) => v.ok),
            [true, true],
        );
        assert.equal(claims.iss, "egress@crawl-proxies.iam.gserviceaccount.com");
        assert.equal(claims.aud, `${fake.url}/token`);
        assert.equal(claims.scope, "https://www.googleapis.com/auth/cloud-platform");
    });

    it("uses gcloud's ADC refresh token and reports a refused one at stage `credentials`", async () => {
        fs.mkdirSync(path.join(emptyHome, ".config", "gcloud"), { recursive: true });
        const adc = path.join(emptyHome, ".config", "gcloud", "application_default_credentials.json");
        fs.writeFileSync(
            adc,
            JSON.stringify({
                type: "authorized_user",
                client_id: "id",
                client_secret: "s",
                refresh_token: "r1",
                token_uri: `${fake.url}/token`,
            }),
        );
        fake.tokenHandler = (form) =>
            form.get("refresh_token") === "r1"
                ? { status: 200, body: { access_token: TOKEN } }
                : {
                      status: 400,
                      body: { error: "invalid_grant", error_description: "Token has been expired or revoked." },
                  };
        const ok = await gcpChecker("gcp-eu", entry, opts({ accessToken: undefined })).check();
        assert.deepEqual(
            ok.map((v) => v.ok),
            [true, true],
        );
        fs.writeFileSync(
            adc,
            JSON.stringify({
                type: "authorized_user",
                client_id: "id",
                client_secret: "s",
                refresh_token: "r2",
                token_uri: `${fake.url}/token`,
            }),
        );
        const [bad] = await gcpChecker("gcp-eu", entry, opts({ accessToken: undefined })).check();
        assert.equal(bad.stage, "credentials");
        assert.match(bad.message, /HTTP 400: invalid_grant — Token has been expired or revoked/);
        fs.rmSync(adc);
    });

    it("fetches a fresh access token every round (a cached one expires after an hour)", async () => {
        const keyFile = path.join(emptyHome, "adc-rounds.json");
        fs.writeFileSync(
            keyFile,
            JSON.stringify({
                type: "authorized_user",
                client_id: "id",
                client_secret: "s",
                refresh_token: "r1",
                token_uri: `${fake.url}/token`,
            }),
        );
        let exchanges = 0;
        fake.tokenHandler = () => {
            exchanges++;
            return { status: 200, body: { access_token: TOKEN } };
        };
        const checker = gcpChecker(
            "gcp-eu",
            entry,
            opts({ accessToken: undefined, env: { GOOGLE_APPLICATION_CREDENTIALS: keyFile } }),
        );
        assert.deepEqual(
            (await checker.check()).map((v) => v.ok),
            [true, true],
        );
        // Both zones of one round share one token.
        assert.equal(exchanges, 1);
        assert.deepEqual(
            (await checker.check()).map((v) => v.ok),
            [true, true],
        );
        assert.equal(exchanges, 2);
    });
});
