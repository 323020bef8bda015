/* global module, require */
// The loaders egress writes into Pulumi state require this package by name from the engine's
// dynamic-provider process, whose cwd and NODE_PATH reach egress's node_modules: npm links it there
// (package.json, "file:providers"). It is egress's compiled src/dynamic-providers.ts (run `npm run build`).
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS package entry, not TypeScript
module.exports = require("../dist/src/dynamic-providers.js");
