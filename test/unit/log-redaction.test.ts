/**
 * Secrets are redacted from log lines by field name at any depth: in the logged object, in child
 * bindings, in errors (own fields, causes), in arrays, behind cycles; the caller's objects are not
 * changed and fields that are not secret keep their values.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger";
import { isSecretName, isSecretQueryName, redactDeep, redactUrl, secretQueryParameter } from "../../src/log/redact";

const CANARY = "canary-7c0ffee-do-not-log";

function capture() {
    const lines: string[] = [];
    const log = createLogger({ level: "debug", destination: { write: (s: string) => void lines.push(s) } });
    return { log, lines, text: () => lines.join("") };
}

/** `{a: {b: {... {leaf}}}}`, `depth` levels down. */
function nest(depth: number, leaf: object): object {
    let o: object = leaf;
    for (let i = depth; i > 0; i--) o = { [`level${i}`]: o };
    return o;
}

test("a canary 20 levels deep under each secret name is redacted; its siblings are kept", () => {
    const names = [
        "token",
        "password",
        "privateKey",
        "private_key",
        "passphrase",
        "secret",
        "cloudInit",
        "userData",
        "authorization",
        "Authorization",
        "x-api-key",
        "githubToken",
        "clientSecret",
        "cookie",
        "credentials",
    ];
    for (const name of names) {
        const { log, lines } = capture();
        log.info({ deep: nest(20, { [name]: CANARY, keep: "visible-1" }) }, "nested");
        assert.ok(!lines[0].includes(CANARY), `${name}: ${lines[0]}`);
        assert.ok(lines[0].includes('"[redacted]"'), name);
        assert.ok(lines[0].includes("visible-1"), `${name}: the sibling survives`);
    }
});

test("deeper than the walk goes, the rest is cut rather than written unscanned", () => {
    const { log, lines } = capture();
    log.info({ deep: nest(60, { note: CANARY }) }, "very deep");
    assert.ok(!lines[0].includes(CANARY));
    assert.ok(lines[0].includes("[too deep to log]"));
});

test("secret-named objects are replaced whole; arrays, bindings and the message object all covered", () => {
    const { log, text } = capture();
    const cloudInit = { users: [{ name: "egress", ssh_authorized_keys: [CANARY] }] };
    const child = log.child({ op: { provider: { auth: { password: CANARY } } } });
    child.info({ members: [{ id: "m1", spec: { cloudInit } }, [[{ passphrase: CANARY }]]] }, "many");
    child.warn("a line with only bindings");
    assert.ok(!text().includes(CANARY), text());
    assert.ok(text().includes('"m1"'));
});

test("errors: own fields, nested fields, causes and aggregate errors are redacted; message and stack kept", () => {
    const { log, lines } = capture();
    const cause = Object.assign(new Error("engine failed"), { config: { provider: { privateKey: CANARY } } });
    const err = Object.assign(new Error("outer", { cause }), {
        request: { headers: { Authorization: `Bearer ${CANARY}` } },
        token: CANARY,
    });
    log.error({ err }, "failed");
    log.error(new AggregateError([Object.assign(new Error("inner"), { secret: CANARY })], "many failed"));
    log.warn({ error: Object.assign(new Error("under another key"), { details: { password: CANARY } }) }, "x");
    for (const l of lines) assert.ok(!l.includes(CANARY), l);
    const first = JSON.parse(lines[0]);
    assert.match(first.err.stack, /outer/);
    assert.match(first.err.message, /outer: engine failed/);
    assert.equal(first.err.token, "[redacted]");
});

test("a cycle does not let the original through", () => {
    const { log, lines } = capture();
    const a: any = { name: "a", inner: { password: CANARY } };
    a.self = a;
    a.inner.back = a;
    log.info({ a }, "cyclic");
    assert.ok(!lines[0].includes(CANARY), lines[0]);
    assert.ok(lines[0].includes("[Circular]"));
});

test("the caller's object is not changed, and an object without secrets comes back as is", () => {
    const o = { proxy: "p1", nested: { password: CANARY } };
    const out = redactDeep(o);
    assert.equal(o.nested.password, CANARY);
    assert.equal(out.nested.password, "[redacted]");
    const clean = { a: [1, { b: "c" }], d: new Date(0) };
    assert.equal(redactDeep(clean), clean);
});

test("token names and scopes stay readable: `tokens`, `tokenName`, `scopes` are not secret names", () => {
    for (const n of ["tokens", "tokenName", "scopes", "name", "secretRef", "passwordFile", "keyName"])
        assert.equal(isSecretName(n), false, n);
    for (const n of [
        "token",
        "TOKEN",
        "access_token",
        "x-auth-token",
        "PrivateKey",
        "vmUserData",
        "set-cookie",
        "proxy-authorization",
    ])
        assert.equal(isSecretName(n), true, n);
    const { log, lines } = capture();
    log.info({ tokens: [{ name: "ci", scopes: ["scale"] }] }, "loaded API tokens");
    assert.deepEqual(JSON.parse(lines[0]).tokens, [{ name: "ci", scopes: ["scale"] }]);
});

test("query parameters: names judged case-insensitively and percent-decoded; values redacted in URLs", () => {
    for (const n of ["key", "KEY", "auth", "jwt", "api_key", "Access_Token"])
        assert.equal(isSecretQueryName(n), true, n);
    for (const n of ["pool", "state", "keys"]) assert.equal(isSecretQueryName(n), false, n);
    assert.equal(secretQueryParameter("/v1/proxies?pool=web&%54oken=x"), "Token");
    assert.equal(secretQueryParameter("/v1/proxies?pool=web"), undefined);
    assert.equal(
        redactUrl(`/v1/x?pool=web&api_key=${CANARY}&Token=${CANARY}`),
        "/v1/x?pool=web&api_key=[redacted]&Token=[redacted]",
    );
    assert.equal(redactUrl("/v1/x"), "/v1/x");
});
