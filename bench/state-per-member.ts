/**
 * What one member costs in Pulumi state (issue 33), from the checkpoint the engine wrote: N local members
 * on the file backend, the checkpoint's bytes over N, and the marginal bytes of a member (the difference
 * between two sizes over the difference in members, so the stack's fixed resources drop out). Also the
 * bytes of provider text (`__provider`, inputs and outputs) in it, and, per dynamic provider, what a
 * resource would carry serialized by value (`pulumi.dynamic.Resource`, before issue 33) against the loader
 * it carries now.
 * Run: node dist/bench/state-per-member.js [members=10,100] [kind=local]
 * (kind `kubernetes`: Deployments and Services on the test cluster, test/helpers/kube-cluster.ts; kind
 * `kvm`: domains from a tiny image on the libvirt sandbox, test/kvm/sandbox.ts, as test/kvm/pool-e2e does;
 * kind `gcp`: member resources against the Compute stand-in, the gcp provider's resources stood in for,
 * test/helpers/gcp-stand-in.ts; kind `static`: a listed proxy per member, on TEST-NET-3 addresses that an
 * `up` never contacts; size does not depend on the machine's load).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { checkpointDir } from "../src/engine/checkpoint";
import { tempProject } from "../test/helpers/project";
import { serializeProvider } from "../test/helpers/serialized-provider";
import { providerLoader } from "../components/shared/dynamic";
import { LOCAL_PROCESS_TYPE, localProcessProvider } from "../components/local/provider";
import { kvmDynamicProviders } from "../components/kvm/dynamic-providers";
import { IDENTITY_TYPE, identityProvider } from "../src/installation-resource";
import { benchTable } from "./table";
import { KubeCluster, startKubeCluster } from "../test/helpers/kube-cluster";
import { kvmEntry, Sandbox, serveTinyImage, startSandbox, teardown } from "../test/kvm/sandbox";
import { GCP_PROJECT, installGcpStandIn, templateDependencyBytes } from "../test/helpers/gcp-stand-in";
import type { FakeCompute } from "../test/fixtures/gcp/fake-compute";

interface Sample {
    members: number;
    checkpointBytes: number;
    providerBytes: number;
    resources: number;
}

/** The test cluster, with kind `kubernetes`. */
let cluster: KubeCluster | undefined;
/** The libvirt sandbox and the tiny image its members boot, with kind `kvm`. */
let kvm: { sb: Sandbox; image: Awaited<ReturnType<typeof serveTinyImage>>; work: string } | undefined;
const KVM_CLOUD_INIT = "#cloud-config\npackages: [squid]\n";
/** The Compute stand-in, with kind `gcp`. */
let gcpFake: FakeCompute | undefined;

/** Kind `static`: a listed proxy per member (nothing runs; the list is what the members are). */
let staticKind = false;

/** The provider entry and the pool's kind-specific settings for this run's kind. */
function kindConfig(stack: string, members: number): { entry: object; pool: object } {
    if (cluster)
        return {
            entry: { type: "kubernetes", kubeconfigPath: cluster.kubeconfig, context: "admin", namespace: stack },
            pool: {},
        };
    if (kvm)
        return {
            entry: kvmEntry(kvm.sb, { url: kvm.image.url, sha256: kvm.image.sha256 }),
            pool: {
                port: 3128,
                placement: { zone: "lab", image: "tiny", machineType: "small" },
                cloudInit: { file: "cloud-init/squid.yaml" },
            },
        };
    if (gcpFake)
        return {
            entry: {
                type: "gcp",
                project: GCP_PROJECT,
                zones: ["europe-west1-b"],
                allowedSourceRanges: ["203.0.113.0/24"],
            },
            pool: { auth: { username: "bench", password: "bench-password-0123456789" } },
        };
    if (staticKind)
        return {
            // TEST-NET-3 addresses (RFC 5737): documentation only, never contacted by an `up`.
            entry: {
                type: "static",
                proxies: Array.from({ length: members }, (_, i) => `http://203.0.113.${1 + (i % 250)}:${3128 + i}`),
            },
            pool: {},
        };
    return { entry: { type: "local" }, pool: {} };
}

/** `up` of N members on a throwaway project; the checkpoint measured, then destroyed. */
async function sample(members: number): Promise<Sample> {
    const stack = `spm${members}`;
    if (cluster) await cluster.createNamespace(stack);
    const { entry, pool } = kindConfig(stack, members);
    const p = tempProject(stack, {
        "egress:providers": { local: entry },
        "egress:pools": [{ name: "web", provider: "local", replicas: members, maxReplicas: 1000, ...pool }],
    });
    if (kvm) {
        fs.mkdirSync(path.join(p.dir, "cloud-init"));
        fs.writeFileSync(path.join(p.dir, "cloud-init", "squid.yaml"), KVM_CLOUD_INIT);
    }
    try {
        await p.driver.up({ refresh: false });
        const file = path.join(checkpointDir(path.join(p.dir, "backend")), `${stack}.json`);
        const text = fs.readFileSync(file, "utf8");
        // Kind gcp: what each member's dependency on its (stood-in) template weighs, added.
        const dependencyBytes = gcpFake ? templateDependencyBytes(text) : 0;
        if (gcpFake)
            console.log(
                `${members} member(s): ${gcpFake.instances.length} instance(s) made by the member resources; template dependencies add ${dependencyBytes} B`,
            );
        const resources = (JSON.parse(text).checkpoint.latest.resources ?? []) as {
            inputs?: { __provider?: string };
            outputs?: { __provider?: string };
        }[];
        const providerBytes = resources.reduce(
            (n, r) => n + (r.inputs?.__provider?.length ?? 0) + (r.outputs?.__provider?.length ?? 0),
            0,
        );
        await p.driver.destroy();
        return {
            members,
            checkpointBytes: Buffer.byteLength(text) + dependencyBytes,
            providerBytes,
            resources: resources.length,
        };
    } finally {
        p.cleanup();
    }
}

const kb = (n: number) => (n / 1024).toFixed(2);

/** Per dynamic provider: its code serialized by value (what state held) and the loader (what it holds now). */
async function providerSizes(): Promise<string[][]> {
    const all: Record<string, object> = {
        [LOCAL_PROCESS_TYPE]: localProcessProvider,
        ...kvmDynamicProviders(),
        [IDENTITY_TYPE]: identityProvider,
    };
    const rows: string[][] = [];
    for (const [type, provider] of Object.entries(all))
        rows.push([
            type.replace("pulumi-nodejs:dynamic/egress:", ""),
            kb((await serializeProvider(provider)).length),
            String(providerLoader(type).length),
        ]);
    return rows;
}

async function main(): Promise<void> {
    const sizes = (process.argv[2] ?? "10,100").split(",").map(Number);
    if (process.argv[3] === "kubernetes") cluster = startKubeCluster();
    if (process.argv[3] === "gcp") gcpFake = await installGcpStandIn();
    if (process.argv[3] === "static") staticKind = true;
    if (process.argv[3] === "kvm") {
        const work = fs.mkdtempSync(path.join(os.tmpdir(), "egress-spm-kvm-"));
        kvm = { sb: startSandbox(), image: await serveTinyImage(work), work };
    }
    try {
        await measure(sizes);
    } finally {
        cluster?.stop();
        await gcpFake?.close();
        if (kvm) await teardown({ image: kvm.image, work: kvm.work });
    }
}

async function measure(sizes: number[]): Promise<void> {
    console.log(benchTable(["resource", "code by value KB", "loader B"], await providerSizes()));
    console.log();
    const samples: Sample[] = [];
    for (const n of sizes) samples.push(await sample(n));
    const rows = samples.map((s, i) => {
        const prev = samples[i - 1];
        const marginal = prev ? (s.checkpointBytes - prev.checkpointBytes) / (s.members - prev.members) : NaN;
        return [
            String(s.members),
            String(s.resources),
            kb(s.checkpointBytes),
            kb(s.checkpointBytes / s.members),
            prev ? kb(marginal) : "",
            kb(s.providerBytes),
        ];
    });
    console.log(
        benchTable(["members", "resources", "checkpoint KB", "KB/member", "marginal KB/member", "__provider KB"], rows),
    );
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
