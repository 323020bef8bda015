/**
 * Kind `gcp` for the engine tests and benches (test/e2e/gcp-members, bench/state-per-member, bench/change-cost). The gcp provider plugin cannot run here (no download, and
 * its Go module is not served), so what it would make is stood in for in this process: @pulumi/gcp's
 * Firewall, Address and InstanceTemplate become component resources of the same type tokens at the
 * stack's root, its Provider one of a bench type, and the member resources (components/gcp/member-provider.ts) run for real in the
 * engine against the Compute stand-in (test/fixtures/gcp/fake-compute.ts), which serves the templates.
 * What a stand-in does not give is a member's dependency on its template (the SDK records none on a
 * component): templateDependencyBytes adds those entries to the checkpoint the engine wrote and answers
 * what they weigh. The pool-level resources' own sizes are not the real ones; per member, they drop out.
 */
import * as pulumi from "@pulumi/pulumi";
import { FakeCompute, startFakeCompute } from "../fixtures/gcp/fake-compute";

export const GCP_PROJECT = "bench-proxies";
const TOKEN = "ya29.bench";

/** A component of `type` in place of a gcp resource; `outputs` are what the program reads of it. */
function standIn(type: string, outputs: (name: string, args: any) => Record<string, unknown>) {
    return class extends pulumi.ComponentResource {
        constructor(name: string, args: any, _opts?: pulumi.CustomResourceOptions) {
            // At the stack's root, not under the pool: a component under a pool is a member to the engine
            // driver (src/engine/state.ts memberComponents), where the real resources are custom.
            super(type, name, {}, {});
            const outs = outputs(name, args);
            Object.assign(this, Object.fromEntries(Object.entries(outs).map(([k, v]) => [k, pulumi.output(v)])));
            this.registerOutputs(outs);
        }
    };
}

/** Starts the Compute stand-in and puts the stand-ins in @pulumi/gcp's place for this process's programs. */
export async function installGcpStandIn(): Promise<FakeCompute> {
    const fake = await startFakeCompute(GCP_PROJECT, TOKEN);
    // Both reach the engine's dynamic-provider process (src/engine/child-env.ts passes GOOGLE_*).
    process.env.GOOGLE_COMPUTE_CUSTOM_ENDPOINT = `${fake.url}/compute/v1/`;
    process.env.GOOGLE_OAUTH_ACCESS_TOKEN = TOKEN;
    const compute = {
        Firewall: standIn("gcp:compute/firewall:Firewall", () => ({})),
        Address: standIn("gcp:compute/address:Address", () => ({ address: "198.51.100.1" })),
        InstanceTemplate: standIn("gcp:compute/instanceTemplate:InstanceTemplate", (_n, args) => {
            const properties: any = { machineType: args.machineType, labels: args.labels };
            fake.templates.push({ name: args.name, properties });
            // As GCE keeps it: metadata items (the user-data a handed-over instance is compared with).
            pulumi.output(args.metadata).apply((m: Record<string, string>) => {
                properties.metadata = { items: Object.entries(m).map(([key, value]) => ({ key, value })) };
            });
            return { name: args.name };
        }),
    };
    // Not `pulumi:providers:gcp`: the engine takes a resource of that type for a provider, whatever its kind.
    const standIns = { Provider: standIn("egress:bench:GcpProviderStandIn", () => ({})), compute };
    const file = require.resolve("@pulumi/gcp");
    require.cache[file] = { id: file, filename: file, loaded: true, exports: standIns } as unknown as NodeModule;
    return fake;
}

interface StateEntry {
    urn: string;
    type: string;
    inputs?: { member?: { tpl?: string } };
    dependencies?: string[];
    propertyDependencies?: Record<string, string[]>;
}

/**
 * The bytes a real template would add to `checkpoint` (the engine's JSON text): each member's dependency
 * on its template (components/gcp/gcp-proxy.ts: `dependsOn`), in `dependencies`, as the engine writes it.
 */
export function templateDependencyBytes(checkpoint: string): number {
    const doc = JSON.parse(checkpoint);
    const resources: StateEntry[] = doc.checkpoint.latest.resources ?? [];
    // The real template's URN: under its pool (the stand-in's is at the stack's root).
    const underPool = (urn: string) => urn.replace(/::gcp:compute/, "::egress:index:ProxyPool$gcp:compute");
    const templates = new Map(
        resources
            .filter((r) => r.type === "gcp:compute/instanceTemplate:InstanceTemplate")
            .map((r) => [r.urn.slice(r.urn.lastIndexOf("::") + 2), underPool(r.urn)]),
    );
    const before = JSON.stringify(doc, null, 4).length;
    for (const r of resources) {
        const tpl = templates.get(r.inputs?.member?.tpl ?? "");
        if (r.type !== "pulumi-nodejs:dynamic/egress:gcp:Member" || !tpl || r.dependencies?.includes(tpl)) continue;
        r.dependencies = [...(r.dependencies ?? []), tpl];
    }
    return JSON.stringify(doc, null, 4).length - before;
}
