/**
 * A broken config rule and where it is, as every layer reports it: kinds' pool and preflight rules
 * return these, src/config gathers them into a ConfigError. Pure (no logging, no redaction: that is
 * the error's job, src/config/errors.ts).
 */

/** One broken rule: where (a config path such as `egress:pools[0].replicas`), which rule, which value. */
export interface ConfigProblem {
    path: string;
    rule: string;
    value?: unknown;
}

/** Renders a path as the user wrote it: `egress:pools[0].placement.zone`. */
export function configPath(path: ReadonlyArray<PropertyKey>, namespace = "egress"): string {
    let out = "";
    path.forEach((seg, i) => {
        if (typeof seg === "number") out += `[${seg}]`;
        else if (i === 0) out += `${namespace}:${String(seg)}`;
        else out += `.${String(seg)}`;
    });
    return out || namespace;
}
