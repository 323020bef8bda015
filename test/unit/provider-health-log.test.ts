/**
 * ProviderHealth logs what an operator needs to follow a provider: a target already down at its first
 * check, and every change of `ok`, of the failing stage or of the reason, but not a round that only
 * differs in numbers (retry times, free bytes).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger";
import { createMetrics } from "../../src/service/observe/metrics";
import { ProviderHealth } from "../../src/service/observe/provider-checks";
import type { CheckVerdict } from "../../components/kind";

test("first verdicts, stage and reason changes and flips are logged; numbers alone are not", async () => {
    const lines: Record<string, any>[] = [];
    const log = createLogger({ destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
    const ph = new ProviderHealth({ log, metrics: createMetrics(), intervalMs: 60_000, timeoutMs: 1000 });
    let verdicts: CheckVerdict[] = [];
    ph.setCheckers([{ provider: "kvm1", kind: "kvm", check: async () => verdicts }]);
    const round = async (v: CheckVerdict[]) => {
        verdicts = v;
        lines.length = 0;
        await ph.runOnce();
        return lines.map((l) => ({
            level: l.level,
            msg: l.msg,
            target: l.target,
            ok: l.ok,
            stage: l.stage,
            reason: l.reason,
            was: l.was,
        }));
    };
    const a = (bytes: number): CheckVerdict => ({
        target: "host-a",
        ok: true,
        message: `pool default running with ${bytes} bytes free`,
    });
    const refused = (secs: string): CheckVerdict => ({
        target: "host-b",
        ok: false,
        stage: "tcp",
        message: `cannot reach sshd: Connection refused (gave up after 3 tries in ${secs} s)`,
    });

    assert.deepEqual(await round([a(100), refused("1.2")]), [
        {
            level: 30,
            msg: "provider target passed its first check",
            target: "host-a",
            ok: true,
            stage: undefined,
            reason: a(100).message,
            was: undefined,
        },
        {
            level: 40,
            msg: "provider target is down at its first check",
            target: "host-b",
            ok: false,
            stage: "tcp",
            reason: refused("1.2").message,
            was: undefined,
        },
    ]);
    assert.deepEqual(await round([a(99), refused("4.7")]), [], "only numbers changed: nothing to say");

    const denied: CheckVerdict = {
        target: "host-b",
        ok: false,
        stage: "ssh-auth",
        message: "the SSH server refused the key",
    };
    assert.deepEqual(
        await round([a(99), denied]),
        [
            {
                level: 40,
                msg: "provider health changed",
                target: "host-b",
                ok: false,
                stage: "ssh-auth",
                reason: denied.message,
                was: { ok: false, stage: "tcp", reason: refused("4.7").message },
            },
        ],
        "a new stage",
    );

    const otherReason: CheckVerdict = { ...denied, message: "the SSH server refused the key for user root" };
    assert.deepEqual(
        (await round([a(99), otherReason])).map((l) => [l.msg, l.reason, l.was.reason]),
        [["provider health changed", otherReason.message, denied.message]],
        "a new reason, same stage",
    );

    const recovered: CheckVerdict = { target: "host-b", ok: true, message: "libvirt answers" };
    assert.deepEqual(
        (await round([a(99), recovered])).map((l) => [l.level, l.msg, l.ok, l.was.ok, l.was.stage]),
        [[30, "provider health changed", true, false, "ssh-auth"]],
        "back up",
    );
    const down: CheckVerdict = {
        target: "host-a",
        ok: false,
        stage: "pool",
        message: "storage pool `default` is inactive",
    };
    assert.deepEqual(
        (await round([down, recovered])).map((l) => [l.level, l.target, l.ok, l.stage, l.was.ok]),
        [[40, "host-a", false, "pool", true]],
        "a flip to down",
    );
});
