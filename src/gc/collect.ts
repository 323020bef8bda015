import type { ProviderConfig } from "../config";
import { kindOf } from "../../components/registry";
import { collectorFor } from "../../components/registry";
import { knownToState } from "./known-to-state";
import type { Collector, ManagedThing } from "../../components/kind";

/** An orphan (labelled for the stack, unknown to state) and, with `--delete`, what removing it did. */
export interface Orphan extends ManagedThing {
    removed?: boolean;
    /** Why removing it failed. */
    error?: string;
}

/** One provider entry's result. A failed entry has `error` (listing failed) or orphans with an `error`. */
export interface ProviderResult {
    provider: string;
    kind: string;
    ok: boolean;
    /** Orphans found; 0 when listing failed. */
    found: number;
    /** Orphans removed (always 0 in a dry run). */
    deleted: number;
    /** Why the entry could not be listed at all (unreachable, bad credentials or kubeconfig, ...). */
    error?: string;
    orphans: Orphan[];
}

export interface GcReport {
    /** False when any entry failed; the others were still collected. */
    ok: boolean;
    dryRun: boolean;
    providers: ProviderResult[];
}

export interface GcOptions {
    project: string;
    stack: string;
    /** The stack's installation id: only things carrying it are collected. */
    installation: string;
    /** Resource IDs in the stack's state: what is known is never collected. */
    stateIds: Set<string>;
    /** Where local proxies keep their files. */
    runDir: string;
    delete: boolean;
}

/**
 * Collects every provider entry on its own (concurrently, in config order in the report): one that cannot
 * be reached, configured or authenticated becomes a failed entry with its cause instead of stopping the
 * others.
 */
export async function collectGarbage(providers: Record<string, ProviderConfig>, opts: GcOptions): Promise<GcReport> {
    // Some kinds' entries of one stack share what they list (local proxies share one directory): only the
    // first entry of such a kind lists them, or the others would report the same orphans again (and try to
    // remove them twice).
    const first = new Map<string, string>();
    for (const [n, e] of Object.entries(providers)) if (!first.has(e.type)) first.set(e.type, n);
    const results = await Promise.all(
        Object.entries(providers).map(([name, entry]) =>
            kindOf(entry).collectOncePerStack && first.get(entry.type) !== name
                ? Promise.resolve(emptyResult(name, entry))
                : collectOne(name, entry, opts),
        ),
    );
    return { ok: results.every((r) => r.ok), dryRun: !opts.delete, providers: results };
}

function emptyResult(name: string, entry: ProviderConfig): ProviderResult {
    return { provider: name, kind: entry.type, ok: true, found: 0, deleted: 0, orphans: [] };
}

async function collectOne(name: string, entry: ProviderConfig, opts: GcOptions): Promise<ProviderResult> {
    const result = emptyResult(name, entry);
    let collector: Collector;
    let things: ManagedThing[];
    try {
        const found = collectorFor(name, entry, opts.runDir, opts.stack);
        if (!found) return result; // the kind leaves nothing behind
        collector = found;
        things = await collector.list({ project: opts.project, stack: opts.stack, installation: opts.installation });
    } catch (e) {
        return { ...result, ok: false, error: (e as Error).message };
    }
    for (const thing of things) {
        if (knownToState(thing, opts.stateIds)) continue;
        const orphan: Orphan = { ...thing };
        result.orphans.push(orphan);
        if (!opts.delete) continue;
        try {
            await collector.remove(thing);
            orphan.removed = true;
            result.deleted++;
        } catch (e) {
            orphan.error = (e as Error).message;
            result.ok = false;
        }
    }
    result.found = result.orphans.length;
    return result;
}
