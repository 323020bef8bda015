// Builds the dashboard (ui/) into dist/ui: type-checks it (its own tsconfig: DOM, bundler resolution),
// bundles ui/app.ts with esbuild (preact + htm, minified, no CDN), copies index.html and the stylesheet.
// Run by `npm run build` and scripts/setup.sh after tsc.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(root, "dist", "ui");
execFileSync(
    process.execPath,
    [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", path.join(root, "ui", "tsconfig.json")],
    { stdio: "inherit" },
);
fs.rmSync(out, { recursive: true, force: true });
await esbuild.build({
    entryPoints: [path.join(root, "ui", "app.ts")],
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2022",
    sourcemap: "linked",
    outfile: path.join(out, "assets", "app.js"),
    logLevel: "warning",
});
fs.copyFileSync(path.join(root, "ui", "style.css"), path.join(out, "assets", "app.css"));
fs.copyFileSync(path.join(root, "ui", "index.html"), path.join(out, "index.html"));
console.error(
    `[build-ui] ${path.relative(root, out)}: ${fs
        .readdirSync(path.join(out, "assets"))
        .map((f) => `${f} ${fs.statSync(path.join(out, "assets", f)).size} B`)
        .join(", ")}`,
);
