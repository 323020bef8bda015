/**
 * A guest that stops while booting, on the real sandbox: the Domain create waits for an address
 * (addressTimeoutSeconds 300), the guest is paused (`virsh suspend`) or its QEMU is SIGKILLed (libvirt:
 * `shut off (crashed)`), and the create fails at once with the state and the console tail instead of
 * waiting out the 300 s. The create's cleanup removes the domain.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as cp from "node:child_process";
import { domainProvider, DomainInputs } from "../../components/kvm/domain";
import { METADATA_NS } from "../../components/kvm/naming";
import { connection, lv, Sandbox, startSandbox, teardown } from "./sandbox";

let sb: Sandbox;
before(() => {
    sb = startSandbox();
});
after(async () => {
    for (const n of ["t-boot-paused", "t-boot-crash"]) removeLeftovers(n);
    await teardown({});
});

/** The domain and disks of `name`, if a run killed before its cleanup (or this one) left them. */
function removeLeftovers(name: string): void {
    const quietly = (args: string[]) => {
        try {
            lv(args);
        } catch {
            // already gone
        }
    };
    quietly(["destroy", name]);
    quietly(["undefine", name]);
    for (const v of [`${name}.qcow2`, `${name}-seed.iso`]) quietly(["vol-delete", "--pool", sb.pool, v]);
}

/** Disks for a domain made with libvirt directly (a blank qcow2 never boots: the firmware keeps trying). */
function domainInputs(name: string): DomainInputs {
    lv(["pool-refresh", sb.pool]);
    removeLeftovers(name); // each file passes on its own, also after a run that was killed mid-way
    lv(["vol-create-as", sb.pool, `${name}.qcow2`, "16M", "--format", "qcow2"]);
    lv(["vol-create-as", sb.pool, `${name}-seed.iso`, "1M", "--format", "raw"]);
    const p = (v: string) => lv(["vol-path", "--pool", sb.pool, v]).trim();
    return {
        conn: connection(sb),
        privateKey: sb.privateKey,
        name,
        domainType: "qemu",
        vcpu: 1,
        memoryMiB: 128,
        firmware: "bios",
        overlayPath: p(`${name}.qcow2`),
        seedPath: p(`${name}-seed.iso`),
        bridge: sb.bridge,
        metadata: { project: "egress", stack: "t", pool: "boot", member: name, provider: "lab" },
        metadataNs: METADATA_NS,
        addressTimeoutSeconds: 300,
    };
}

/** Waits until libvirt says the domain runs, then does `act` to it. */
async function whenRunning(name: string, act: () => void): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
        const state = (() => {
            try {
                return lv(["domstate", name]).trim();
            } catch {
                return "missing";
            }
        })();
        if (state === "running") return act();
        if (Date.now() > deadline) throw new Error(`domain ${name} never ran (${state})`);
        await new Promise((r) => setTimeout(r, 200));
    }
}

async function createFails(name: string, act: () => void): Promise<{ message: string; ms: number }> {
    const inputs = domainInputs(name);
    const t0 = Date.now();
    const acted = whenRunning(name, act);
    const e = await domainProvider.create!(inputs).then(
        () => assert.fail("the create should have failed"),
        (x) => x,
    );
    await acted;
    const ms = Date.now() - t0;
    console.log(`${name}: create failed after ${ms} ms: ${(e as Error).message.replace(/\n/g, " | ").slice(0, 400)}`);
    return { message: (e as Error).message, ms };
}

test(
    "a guest paused while booting fails the create at once, with its state and console tail",
    { timeout: 180_000 },
    async () => {
        const { message, ms } = await createFails("t-boot-paused", () => lv(["suspend", "t-boot-paused"]));
        assert.match(
            message,
            /^domain t-boot-paused on host sandbox stopped while booting, \d+ s after start: it is paused \(user\), so it will never get an address; not waiting out addressTimeoutSeconds \(300 s\)\. Last lines of its serial console:\n./,
        );
        assert.ok(ms < 100_000, `failed well before the 300 s address timeout (${ms} ms)`);
        assert.ok(
            !lv(["list", "--all", "--name"]).split("\n").includes("t-boot-paused"),
            "the create removed the domain",
        );
    },
);

test(
    "a guest whose QEMU crashes while booting fails the create at once, with its state and console tail",
    { timeout: 180_000 },
    async () => {
        const { message, ms } = await createFails("t-boot-crash", () => {
            // The one QEMU process of this domain (its command line names it), killed as a crash would.
            const pid = cp
                .execFileSync("pgrep", ["-f", "guest=t-boot-crash,"], { encoding: "utf8" })
                .trim()
                .split("\n");
            assert.equal(pid.length, 1, `one QEMU for the domain (${pid.join(",")})`);
            process.kill(Number(pid[0]), "SIGKILL");
        });
        assert.match(
            message,
            /^domain t-boot-crash on host sandbox stopped while booting, \d+ s after start: it is shut off \(crashed\), so it will never get an address; .*Last lines of its serial console:\n./s,
        );
        assert.ok(ms < 100_000, `failed well before the 300 s address timeout (${ms} ms)`);
        assert.ok(
            !lv(["list", "--all", "--name"]).split("\n").includes("t-boot-crash"),
            "the create removed the domain",
        );
    },
);
