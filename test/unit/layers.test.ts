/**
 * The folders are the layers (docs/architecture.md): every import of every file in src/ and components/
 * — `import type`, `export ... from`, `import("…")` types and lazy `require("…")` included — is read with
 * TypeScript's own scanner (comments and strings are not imports), resolved, and held to the rule:
 * - src/model and src/log are the bottom: they import nothing of egress outside themselves;
 * - components/ imports nothing of src/ but src/model and src/log;
 * - src/ reaches components/ only through the registry and the kind-independent modules (kind.ts,
 *   pool.ts, shared/): a kind's own files are the registry's business;
 * - inside src/, one-way layers: model and log < components < config < program < engine < probes,
 *   gc < state < fleet-ops < service < cli;
 * - src/cli reaches src/service only through the service's entry (src/service/index.ts, what `serve` starts):
 *   what the CLI shares with the service lives below both, in src/state and src/fleet-ops;
 * - no import circle between files, of any length.
 * Failures name the file, the line and the edge (and, for a circle, one path around it).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../src/engine/env";

/** One import of one file: where it is written and what it resolves to (a path relative to the package root). */
interface Edge {
    from: string;
    line: number;
    spec: string;
    /** Undefined for a package or node: builtin; "?<path>" for a relative import that resolves to nothing. */
    to?: string;
}

function sources(dir: string): string[] {
    return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((d) => {
        const p = `${dir}/${d.name}`;
        return d.isDirectory() ? sources(p) : d.name.endsWith(".ts") ? [p] : [];
    });
}

/** A relative import resolved as Node and tsc do here (commonjs): the file, `.ts`, or the folder's index.ts. */
function resolve(from: string, spec: string): string | undefined {
    if (!spec.startsWith(".")) return undefined;
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
    for (const c of [`${base}.ts`, `${base}/index.ts`, base])
        if (fs.existsSync(path.join(PACKAGE_ROOT, c)) && fs.statSync(path.join(PACKAGE_ROOT, c)).isFile()) return c;
    return `?${base}`;
}

/** Every import of `text` (the file `from`), with its line. */
function importsOf(from: string, text: string): Edge[] {
    const info = ts.preProcessFile(text, true, true);
    return info.importedFiles.map((f) => ({
        from,
        line: text.slice(0, f.pos).split("\n").length,
        spec: f.fileName,
        to: resolve(from, f.fileName),
    }));
}

const FILES = [...sources("src"), ...sources("components")];
const EDGES = FILES.flatMap((f) => importsOf(f, fs.readFileSync(path.join(PACKAGE_ROOT, f), "utf8")));
const show = (e: Edge) => `${e.from}:${e.line}: ${e.spec} -> ${e.to}`;
const under = (file: string | undefined, ...dirs: string[]) =>
    file !== undefined && dirs.some((d) => file.startsWith(`${d}/`));

test("the scanner sees every form of import and nothing in comments or strings", () => {
    const text = [
        'import type { A } from "./kind";',
        'export { b } from "./registry";',
        'export * from "./pool";',
        'const lazy = require("./local") as typeof import("./kvm");',
        '// import "./gcp";',
        'const s = "require(\\"./static\\")";',
        'import * as fs from "node:fs";',
    ].join("\n");
    const edges = importsOf("components/x.ts", text);
    assert.deepEqual(
        edges.map((e) => [e.line, e.spec, e.to]),
        [
            [1, "./kind", "components/kind.ts"],
            [2, "./registry", "components/registry.ts"],
            [3, "./pool", "components/pool.ts"],
            [4, "./local", "components/local/index.ts"],
            [4, "./kvm", "components/kvm/index.ts"],
            [7, "node:fs", undefined],
        ],
    );
});

test("every relative import resolves to a file (a stale lazy require would fail only at run time)", () => {
    assert.ok(FILES.length > 150 && EDGES.length > 500, `read ${FILES.length} files, ${EDGES.length} imports`);
    assert.deepEqual(EDGES.filter((e) => e.to?.startsWith("?")).map(show), []);
});

test("src/model and src/log import nothing of egress outside themselves", () => {
    const bad = EDGES.filter(
        (e) => e.to !== undefined && ["src/model", "src/log"].some((d) => under(e.from, d) && !under(e.to, d)),
    );
    assert.deepEqual(bad.map(show), []);
});

test("components/ imports nothing of src/ but src/model and src/log", () => {
    const bad = EDGES.filter(
        (e) => under(e.from, "components") && e.to !== undefined && !under(e.to, "components", "src/model", "src/log"),
    );
    assert.deepEqual(bad.map(show), []);
});

test("src/ reaches components/ only through the registry, the kind contract, ProxyPool and shared/", () => {
    const open = /^components\/(registry|kind|pool)\.ts$|^components\/shared\//;
    const bad = EDGES.filter((e) => under(e.from, "src") && under(e.to, "components") && !open.test(e.to!));
    assert.deepEqual(bad.map(show), []);
});

/**
 * src/ in one-way layers, bottom first (docs/architecture.md): a file may import its own layer and those
 * listed before it. state and fleet-ops hold what the CLI and the service share (docs/decisions/0096): the
 * store's connection, records, locks, journal and event streams; the rolling change, the targeted replace,
 * the engine retry. Files at src/'s root belong to the layer they start: cli.ts is the CLI, program.ts and
 * installation-resource.ts are the program, program-main.ts (what `pulumi up` runs) starts engine and program,
 * dynamic-providers.ts (what the engine's dynamic-provider process loads) serves the program's resources.
 */
const ORDER = [
    ["model", "log"],
    ["components"],
    ["config"],
    ["program"],
    ["engine"],
    ["probes", "gc", "program-main"],
    ["state"],
    ["fleet-ops"],
    ["service"],
    ["cli"],
];
const ROOT_FILES: Record<string, string> = {
    "src/cli.ts": "cli",
    "src/program.ts": "program",
    "src/installation-resource.ts": "program",
    "src/program-main.ts": "program-main",
    "src/dynamic-providers.ts": "program-main",
};
function layerOf(file: string): number {
    const name = file.startsWith("components/") ? "components" : (ROOT_FILES[file] ?? file.split("/")[1]);
    const rank = ORDER.findIndex((names) => names.includes(name));
    assert.ok(rank >= 0, `${file} is in no layer: add its folder to ORDER`);
    return rank;
}

test("inside src/, a folder imports only its own layer and those below it", () => {
    const bad = EDGES.filter(
        (e) => e.to && !e.to.startsWith("?") && under(e.to, "src", "components") && layerOf(e.to) > layerOf(e.from),
    );
    assert.deepEqual(bad.map(show), []);
});

/** The service's entry: what `egress serve` starts the service with, and the one file of src/service the CLI imports. */
const SERVICE_ENTRY = ["src/service/index.ts"];

test("src/cli imports from src/service only the service's entry (src/service/index.ts)", () => {
    const bad = EDGES.filter(
        (e) =>
            (under(e.from, "src/cli") || e.from === "src/cli.ts") &&
            under(e.to, "src/service") &&
            !SERVICE_ENTRY.includes(e.to!),
    );
    assert.deepEqual(bad.map(show), []);
    const entry = EDGES.filter((e) => under(e.from, "src/cli") && SERVICE_ENTRY.includes(e.to!));
    assert.ok(entry.length > 0, "no CLI file imports the service's entry: is SERVICE_ENTRY stale?");
});

/**
 * src/service in rooms (docs/architecture.md), bottom first: a room imports its own files and the rooms
 * before it, never a room beside it or above it. http holds what every door shares (the error catalogue,
 * auth, the request log); the lease book and its store; the cluster (replicas, the leader lock); the
 * operation journal kept by replicas; the fleet view; what is observed; then the two that act (the gateway, control: scale, drain, heal, the stack watch); the API;
 * and the start-up that wires it all. A file at src/service's root (index.ts) is the start-up's.
 */
const SERVICE_ROOMS = [
    ["http"],
    ["leases"],
    ["store"],
    ["cluster"],
    ["operations"],
    ["fleet"],
    ["observe"],
    ["gateway", "control"],
    ["api"],
    ["start"],
];
/**
 * src/state in rooms, bottom first: redis (the store's URL, opening it, its unavailable error, the loop
 * periodic readers run on); cluster (the store's records and scripts, the fenced writes, the desired
 * counts, the scale queue, the command lock, the replica scope, the service's announcement); operations
 * (the operation record, its journal on file and in the store, its event streams).
 */
const STATE_ROOMS = [["redis"], ["cluster"], ["operations"]];
const ROOMS: Record<string, { rooms: string[][]; root: string }> = {
    service: { rooms: SERVICE_ROOMS, root: "start" },
    state: { rooms: STATE_ROOMS, root: "operations" },
};
function roomOf(file: string): { room: string; rank: number } {
    const parts = file.split("/");
    const { rooms, root } = ROOMS[parts[1]];
    const room = parts.length === 3 ? root : parts[2];
    const rank = rooms.findIndex((names) => names.includes(room));
    assert.ok(rank >= 0, `${file} is in no room of src/${parts[1]}: add its folder to its rooms`);
    return { room, rank };
}

for (const layer of Object.keys(ROOMS))
    test(`inside src/${layer}, a room imports only itself and the rooms below it (none beside it)`, () => {
        const bad = EDGES.filter((e) => {
            if (!under(e.from, `src/${layer}`) || !under(e.to, `src/${layer}`)) return false;
            const [a, b] = [roomOf(e.from), roomOf(e.to!)];
            return a.room !== b.room && b.rank >= a.rank;
        });
        assert.deepEqual(bad.map(show), []);
    });

/** The strongly connected components of the import graph with more than one file (or a file importing itself). */
function circles(edges: Edge[]): string[][] {
    const next = new Map<string, string[]>();
    for (const e of edges) if (e.to && !e.to.startsWith("?")) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    let counter = 0;
    const index = new Map<string, number>(),
        low = new Map<string, number>(),
        stack: string[] = [],
        onStack = new Set<string>(),
        out: string[][] = [];
    const visit = (v: string): void => {
        index.set(v, counter);
        low.set(v, counter++);
        stack.push(v);
        onStack.add(v);
        for (const w of next.get(v) ?? []) {
            if (!index.has(w)) {
                visit(w);
                low.set(v, Math.min(low.get(v)!, low.get(w)!));
            } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        }
        if (low.get(v) !== index.get(v)) return;
        const scc: string[] = [];
        let w: string;
        do {
            w = stack.pop()!;
            onStack.delete(w);
            scc.push(w);
        } while (w !== v);
        if (scc.length > 1 || (next.get(v) ?? []).includes(v)) out.push(scc);
    };
    for (const f of new Set(edges.map((e) => e.from))) if (!index.has(f)) visit(f);
    return out;
}

/** One path around a circle: the shortest way from its first file back to it, as `a -> b -> a`. */
function cyclePath(scc: string[], edges: Edge[]): string {
    const inside = new Set(scc);
    const start = [...scc].sort()[0];
    const came = new Map<string, Edge>();
    const queue = [start];
    for (let i = 0; i < queue.length; i++) {
        for (const e of edges.filter((x) => x.from === queue[i] && x.to && inside.has(x.to))) {
            if (e.to === start) {
                const hops = [e];
                for (let at = e.from; at !== start; at = came.get(at)!.from) hops.unshift(came.get(at)!);
                return `${scc.length} files; ${hops.map((h) => `${h.from}:${h.line}`).join(" -> ")} -> ${start}`;
            }
            if (!came.has(e.to!)) {
                came.set(e.to!, e);
                queue.push(e.to!);
            }
        }
    }
    return `${scc.length} files: ${scc.join(", ")}`;
}

test("no import circle between files", () => {
    assert.deepEqual(
        circles(EDGES).map((scc) => cyclePath(scc, EDGES)),
        [],
    );
});

test("the circle finder reports a circle with one path around it", () => {
    const edges: Edge[] = [
        { from: "src/a.ts", line: 1, spec: "./b", to: "src/b.ts" },
        { from: "src/b.ts", line: 3, spec: "./c", to: "src/c.ts" },
        { from: "src/c.ts", line: 2, spec: "./a", to: "src/a.ts" },
    ];
    const found = circles([...EDGES, ...edges]).filter((scc) => scc.includes("src/a.ts"));
    assert.deepEqual(
        found.map((scc) => cyclePath(scc, edges)),
        ["3 files; src/a.ts:1 -> src/b.ts:3 -> src/c.ts:2 -> src/a.ts"],
    );
});
