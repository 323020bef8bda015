/**
 * The generated squid config's auth, proven with the real squid (`apt-get install squid`,
 * scripts/install-test-deps.sh): the config comes from the one shared generator (components/shared/squid.ts),
 * only the port and the paths are moved into a temp dir on 127.0.0.1, and squid runs as `squid -N`.
 */
import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { squidBaseConf } from "../../components/shared/squid";
import { squidPasswdFile } from "../../components/shared/squid-passwd";
import { closedPort } from "../fixtures/ports";
import { ensureTestPackages } from "../helpers/deps";
import { squidStateLines, startSquidIn } from "../helpers/squid";
import { getViaProxy, proxyBasicAuth, requestViaProxy, startTargetServer } from "../helpers/net";

const PASSWORD = "squid-canary-Zq8vR2pLx";

/** Runs squid in the foreground on 127.0.0.1 with the generated lines; resolves once it accepts requests. */
async function runSquid(lines: string[], t: { after(fn: () => unknown): void }): Promise<number> {
    ensureTestPackages();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-squid-"));
    const port = await closedPort();
    const passwd = path.join(dir, "egress.passwd");
    fs.writeFileSync(passwd, squidPasswdFile({ username: "crawler", password: PASSWORD }, "test/pool"));
    const conf = [
        ...lines.map((l) =>
            l.replace(/^http_port \d+$/, `http_port 127.0.0.1:${port}`).replaceAll("/etc/squid/egress.passwd", passwd),
        ),
        ...squidStateLines(dir),
    ].join("\n");
    fs.writeFileSync(path.join(dir, "squid.conf"), conf + "\n");
    // Any answer (407, 403, 503) means it serves.
    const squid = await startSquidIn(dir, () => getViaProxy(port, "http://127.0.0.1:9/", 1000).then(() => true));
    t.after(() => squid.stop());
    return port;
}

test("squid with the generated auth config: 407 without or with wrong credentials, 200 with them, passwd file has no clear password", async (t) => {
    const origin = await startTargetServer();
    t.after(() => origin.close());
    const port = await runSquid(squidBaseConf(3128, ["127.0.0.1/32"], {}), t);
    const url = `http://127.0.0.1:${origin.port}/through-squid`;

    const none = await requestViaProxy(port, url);
    assert.equal(none.status, 407, none.body);
    assert.match(String(none.headers["proxy-authenticate"]), /^Basic realm="egress"/);

    const wrong = await requestViaProxy(port, url, proxyBasicAuth("crawler", PASSWORD + "x"));
    assert.equal(wrong.status, 407);
    const otherUser = await requestViaProxy(port, url, proxyBasicAuth("someone", PASSWORD));
    assert.equal(otherUser.status, 407);

    const ok = await requestViaProxy(port, url, proxyBasicAuth("crawler", PASSWORD));
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.body, "hello /through-squid");
});

test("squid with auth: a client outside the source ranges is denied (403) without a 407 challenge, even with the right credentials", async (t) => {
    const origin = await startTargetServer();
    t.after(() => origin.close());
    // 127.0.0.1 is not in the range: the test client is an outsider.
    const port = await runSquid(squidBaseConf(3128, ["192.0.2.0/24"], {}), t);
    const url = `http://127.0.0.1:${origin.port}/`;
    const none = await requestViaProxy(port, url);
    assert.equal(none.status, 403);
    assert.equal(none.headers["proxy-authenticate"], undefined);
    const withCreds = await requestViaProxy(port, url, proxyBasicAuth("crawler", PASSWORD));
    assert.equal(withCreds.status, 403);
});

test("squid without auth (the generator's default) still admits the source ranges without credentials", async (t) => {
    const origin = await startTargetServer();
    t.after(() => origin.close());
    const port = await runSquid(squidBaseConf(3128, ["127.0.0.1/32"]), t);
    const r = await getViaProxy(port, `http://127.0.0.1:${origin.port}/open`);
    assert.equal(r.status, 200, r.body);
});
