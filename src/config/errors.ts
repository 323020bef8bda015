import type { z } from "zod";
import { isSecretName, REDACTED, redactDeep } from "../log/redact";
import { type ConfigProblem, configPath } from "../model";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

/** Invalid configuration. `message` lists every problem, one per line, each naming its config path. */
export class ConfigError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.invalid, type: "ConfigError" };
    }
    readonly problems: ConfigProblem[];
    constructor(problems: ConfigProblem[], source?: string) {
        const where = source ? ` in ${source}` : "";
        super(`invalid egress configuration${where}:\n` + problems.map((p) => "  - " + formatProblem(p)).join("\n"));
        this.name = "ConfigError";
        this.problems = problems;
    }
}

export function formatProblem(p: ConfigProblem): string {
    const shown = p.value === undefined ? "" : ` (got ${preview(p.value)})`;
    return `${p.path}: ${p.rule}${shown}`;
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
    let cur: any = root;
    for (const seg of path) {
        if (cur === null || typeof cur !== "object") return undefined;
        cur = cur[seg as any];
    }
    return cur;
}

/**
 * The value a problem may show: none of a secret (a path through `privateKey`, `passphrase`, `cloudInit`...
 * names one), and an object's secret fields redacted at any depth (an `ssh` block quoted whole when its
 * keys conflict holds a private key). Problems reach logs, HTTP error bodies and `--json` output.
 */
function shownValue(path: ReadonlyArray<PropertyKey>, v: unknown): unknown {
    if (v !== undefined && path.some((seg) => typeof seg === "string" && isSecretName(seg))) return REDACTED;
    return redactDeep(v);
}

function preview(v: unknown): string {
    // Secrets never reach error output: a `{secure: ...}` value prints as such.
    if (v && typeof v === "object" && "secure" in (v as object)) return "[secret]";
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 80 ? s.slice(0, 77) + "..." : s;
}

const WANTED: Record<string, string> = {
    array: "a list",
    object: "a mapping",
    record: "a mapping",
    string: "a string",
    number: "a number",
    int: "a whole number",
    boolean: "true or false",
};

/** The rule a value of the wrong type broke: required when it is missing, else what it must be instead. */
function typeRule(expected: string, actual: unknown): string {
    const want = WANTED[expected] ?? expected;
    if (actual === undefined) return `is required (${want})`;
    const got = actual === null ? "null" : Array.isArray(actual) ? "a list" : (WANTED[typeof actual] ?? typeof actual);
    return `must be ${want}, not ${got}`;
}

/** Turns zod issues into problems that name the config path, the rule and the offending value. */
export function problemsFromZod(error: z.ZodError, raw: unknown, kindNames: readonly string[] = []): ConfigProblem[] {
    return error.issues.map((issue) => {
        const path = issue.path as PropertyKey[];
        let rule = issue.message;
        if (issue.code === "unrecognized_keys")
            rule = `unknown key(s) ${issue.keys.map((k) => "`" + k + "`").join(", ")}`;
        if (issue.code === "invalid_union" && (issue as any).note === "No matching discriminator")
            rule = `\`type\` must be one of ${kindNames.join(", ")}`;
        // zod's own wording ("Invalid input: expected array, received undefined") says neither what is
        // missing nor what to write; a schema's own message is kept.
        if (issue.code === "invalid_type" && issue.message.startsWith("Invalid input"))
            rule = typeRule(String(issue.expected), valueAt(raw, path));
        const value = issue.code === "unrecognized_keys" ? undefined : shownValue(path, valueAt(raw, path));
        return { path: configPath(path), rule, value };
    });
}
