/**
 * The error sorting that travels inside serialized dynamic providers gives the same answers there as in
 * this process. Pulumi's closure serializer copies a module-level `Set` or `Map` as a plain object, so
 * `.has` on it throws "incompatible receiver" only inside the provider, and only on the path that asks
 * (a KVM retry after a dropped connection failed a CI run that way). Two checks: the real functions run
 * serialized, and no module of components/ holds a Set or Map at its top level.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { classifyVirshFailure, virshRetryable } from "../../components/kvm/libvirt-errors";
import { classifyHttp } from "../../components/shared/errors";
import { PACKAGE_ROOT } from "../../src/engine/env";
import { runSerialized, serializeProvider } from "../helpers/serialized-provider";

/** Each case once, so the serialized run and this one ask exactly the same questions. */
function answers(): unknown {
    const dropped = { errorClass: "transient", mayHaveRun: true };
    return {
        readRetried: virshRetryable(["domstate vm-1"], dropped),
        batchRetried: virshRetryable(["vol-info a; vol-path b"], dropped),
        writeNotRetried: virshRetryable(["vol-upload base.qcow2 /tmp/x"], dropped),
        metadataSetNotRetried: virshRetryable(["metadata vm-1 --set x"], dropped),
        rateLimited: classifyHttp(403, "rateLimitExceeded"),
        forbidden: classifyHttp(403, "forbidden"),
        keepaliveTransient: classifyVirshFailure("error: internal error: connection closed due to keepalive timeout")
            .transient,
    };
}

describe("error sorting inside a serialized dynamic provider", () => {
    it("gives the same answers as in this process", async () => {
        const here = answers() as Record<string, unknown>;
        assert.equal(here.readRetried, true);
        assert.equal(here.writeNotRetried, false);
        assert.equal(here.rateLimited, "transient");
        assert.equal(here.keepaliveTransient, true, "a keepalive drop is connection trouble, worth a retry");
        const text = await serializeProvider({ create: async () => ({ id: "x", outs: answers() }) });
        const [created] = runSerialized(text, [{ method: "create", args: [{}] }]) as { outs: unknown }[];
        assert.deepEqual(created.outs, here);
    });

    it("no module under components/ keeps a Set or Map at its top level", () => {
        const offenders: string[] = [];
        const walk = (dir: string): void => {
            for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
                const p = path.join(dir, e.name);
                if (e.isDirectory()) walk(p);
                else if (e.name.endsWith(".ts"))
                    fs.readFileSync(p, "utf8")
                        .split("\n")
                        .forEach((line, i) => {
                            if (/^(export )?(const|let|var) \w+[^=]*= new (Set|Map|WeakSet|WeakMap)\b/.test(line))
                                offenders.push(`${path.relative(PACKAGE_ROOT, p)}:${i + 1}`);
                        });
            }
        };
        walk(path.join(PACKAGE_ROOT, "components"));
        assert.deepEqual(offenders, [], "use an array or a plain object: the closure serializer does not carry these");
    });
});
