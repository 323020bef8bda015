/**
 * Two pools of one KVM provider entry and image on one host, through the real engine: one BaseImage for
 * the whole program (not one per pool racing the other's `vol-create`), one base volume backing both
 * pools' overlays; dropping a pool keeps the base, destroy removes it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { tempProject } from "../helpers/project";
import { installationPrefix } from "../../components/kvm/naming";
import { kvmEntry, lv, Sandbox, serveTinyImage, startSandbox, teardown } from "./sandbox";

const STACK = "kvm-shared";
let sb: Sandbox;
let image: Awaited<ReturnType<typeof serveTinyImage>>;
let project: ReturnType<typeof tempProject>;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-kvm-shared-"));

const pool = (name: string, replicas: number) => ({
    name,
    provider: "shr",
    replicas,
    maxReplicas: 4,
    port: 3128,
    placement: { zone: "lab", image: "tiny", machineType: "small" },
});
const config = (pools: object[]) => ({
    "egress:providers": { shr: kvmEntry(sb, { url: image.url, sha256: image.sha256 }) },
    "egress:pools": pools,
});
const bases = () => fs.readdirSync(sb.poolDir).filter((f) => f.startsWith("base-shr-"));
/** The members' names start with the installation prefix the first `up` made. */
let prefix = "";
const overlays = () => fs.readdirSync(sb.poolDir).filter((f) => f.startsWith(prefix) && f.endsWith(".qcow2"));

before(async () => {
    sb = startSandbox();
    for (const f of bases()) fs.rmSync(path.join(sb.poolDir, f), { force: true });
    lv(["pool-refresh", sb.pool]);
    image = await serveTinyImage(work);
    project = tempProject(STACK, config([pool("sa", 2), pool("sb", 1)]));
});
after(() => teardown({ project, image, work }));

test("two pools sharing an entry and image: one BaseImage, one base volume", { timeout: 600_000 }, async () => {
    let t0 = Date.now();
    await project.driver.up();
    prefix = installationPrefix((await project.driver.installation()).installation.id);
    console.log(`up (2 pools, 3 members) ${Date.now() - t0} ms`);
    assert.deepEqual(
        (await project.driver.proxies()).map((p) => p.id),
        ["sa-0", "sa-1", "sb-0"],
    );
    const names = (await project.driver.resources()).map((r) => r.name);
    assert.deepEqual(
        names.filter((n) => n.includes("-base-")),
        ["shr-base-tiny-sandbox"],
        "one BaseImage for the program",
    );
    assert.ok(
        (await project.driver.resources()).some((r) => r.type === "egress:kvm:KvmBaseImages" && r.name === "shr"),
    );
    assert.deepEqual(bases(), ["base-shr-tiny.qcow2"]);
    const basePath = path.join(sb.poolDir, "base-shr-tiny.qcow2");
    assert.equal(overlays().length, 3);
    for (const o of overlays())
        assert.match(
            lv(["vol-dumpxml", "--pool", sb.pool, o]),
            new RegExp(`<backingStore>[\\s\\S]*<path>${basePath}</path>`),
            o,
        );

    // A second up with nothing changed (addresses still unknown: Domains look once, no waiting).
    t0 = Date.now();
    await project.driver.up();
    console.log(`up, no changes ${Date.now() - t0} ms`);

    project.writeConfig(config([pool("sa", 1)]));
    await project.driver.up();
    assert.deepEqual(
        (await project.driver.proxies()).map((p) => p.id),
        ["sa-0"],
    );
    assert.deepEqual(bases(), ["base-shr-tiny.qcow2"], "base kept while a pool uses it");

    t0 = Date.now();
    await project.driver.destroy();
    console.log(`destroy ${Date.now() - t0} ms`);
    assert.deepEqual(bases(), []);
    assert.deepEqual(overlays(), []);
    assert.deepEqual(await project.driver.resources(), []);
});
