// A node:test reporter (scripts/test.sh adds it beside `spec`): how long each test file ran, longest
// first, so test/slow-first.txt can be kept from a run's numbers. A file's time runs from the start of its
// first test to the end of its last (events arrive as tests end), so a long `before` hook counts once its
// first test ends; an `after` hook does not.
export default async function* testTimes(source) {
    const files = new Map();
    for await (const event of source) {
        if (event.type !== "test:pass" && event.type !== "test:fail") continue;
        const { file, nesting, details } = event.data;
        if (!file || nesting !== 0) continue;
        const now = Date.now();
        const f = files.get(file) ?? { first: now - (details?.duration_ms ?? 0), last: now };
        f.first = Math.min(f.first, now - (details?.duration_ms ?? 0));
        f.last = now;
        files.set(file, f);
    }
    const rows = [...files].map(([file, f]) => [Math.round((f.last - f.first) / 1000), file]);
    rows.sort((a, b) => b[0] - a[0]);
    for (const [s, file] of rows) yield `${String(s).padStart(6)} s  ${file.replace(`${process.cwd()}/`, "")}\n`;
}
