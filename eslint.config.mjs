// ESLint (flat config) with typescript-eslint's recommended rules, over the TypeScript sources. The
// rules turned off are deliberate in this codebase; docs/decisions/0048-lint.md says why.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
    { ignores: ["dist/**", "node_modules/**", "clients/*/dist/**", "clients/typescript/src/api.ts"] },
    js.configs.recommended,
    ...tseslint.configs.recommended,
    // Build scripts run on node: its globals.
    {
        files: ["**/*.mjs"],
        languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
    },
    // A CommonJS preload (scripts/exit-watch.cjs): node's globals and require.
    {
        files: ["**/*.cjs"],
        languageOptions: {
            sourceType: "commonjs",
            globals: {
                process: "readonly",
                require: "readonly",
                setImmediate: "readonly",
                setTimeout: "readonly",
            },
        },
        rules: { "@typescript-eslint/no-require-imports": "off" },
    },
    {
        files: ["**/*.ts", "**/*.mjs"],
        rules: {
            // Dynamic providers are serialized by value: their node modules are `require`d inside functions.
            "@typescript-eslint/no-require-imports": "off",
            // Engine events, exports and state are untyped JSON at the edges.
            "@typescript-eslint/no-explicit-any": "off",
            "@typescript-eslint/no-unused-vars": [
                "error",
                { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
            ],
        },
    },
    // A newcomer reads a function, not a file: at most 80 lines of code per function in the product
    // (docs/decisions/0092-function-length.md). Tests and benches are lists of cases and rows.
    {
        files: ["src/**/*.ts", "components/**/*.ts"],
        rules: {
            "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
        },
    },
);
