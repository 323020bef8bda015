/** Assertions over the gateway's username parser (src/service/gateway/username.ts), for its unit tests. */
import assert from "node:assert/strict";
import { GRAMMAR, parseUsername } from "../../src/service/gateway/username";

/** `raw` parses; returns what it parsed to. */
export function okUsername(raw: string) {
    const r = parseUsername(raw);
    assert.ok(r.ok, `${JSON.stringify(raw)} parses: ${r.ok ? "" : r.message}`);
    return r.user;
}

/** `raw` is refused with a short message matching `why` that ends stating the grammar; returns the message. */
export function badUsername(raw: string, why: RegExp): string {
    const r = parseUsername(raw);
    assert.ok(!r.ok, `${JSON.stringify(raw)} is refused`);
    assert.match(r.message, why);
    assert.ok(r.message.endsWith(`expected ${GRAMMAR}`), "the message states the grammar");
    assert.ok(r.message.length < 700, "the message stays short");
    return r.message;
}
