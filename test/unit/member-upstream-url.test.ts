import { test } from "node:test";
import assert from "node:assert/strict";
import { memberUpstreamUrl } from "../../src/service/fleet/credentials";
import { proxyAuthorization } from "../../src/probes/probe";

const member = { url: "http://10.0.0.7:3128", auth: true };
const creds = { username: "crawler", password: "p@ss:w/rd%?#" };

test("a member requiring credentials gets them in its URL, escaped so the URL parses back to them", () => {
    const url = memberUpstreamUrl(member, creds);
    assert.equal(url, "http://crawler:p%40ss%3Aw%2Frd%25%3F%23@10.0.0.7:3128");
    const u = new URL(url);
    assert.deepEqual(
        [decodeURIComponent(u.username), decodeURIComponent(u.password), u.host],
        ["crawler", creds.password, "10.0.0.7:3128"],
    );
});

test("no credentials in the URL of a member that needs none, or whose credentials are unknown, or without an address", () => {
    assert.equal(memberUpstreamUrl({ url: member.url }, creds), member.url);
    assert.equal(memberUpstreamUrl(member, undefined), member.url);
    assert.equal(memberUpstreamUrl({ url: "", auth: true }, creds), "");
});

test("Proxy-Authorization is basic auth of user:password", () => {
    assert.equal(proxyAuthorization(creds), `Basic ${Buffer.from("crawler:p@ss:w/rd%?#").toString("base64")}`);
});
