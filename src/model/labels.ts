import { z } from "zod";

/**
 * Member labels: what a crawler selects members by (`_country_de` in a gateway username, `where` in
 * POST /v1/leases). A member's labels are its pool's `labels` from the config, then what its kind knows
 * (`zone`, and `region` or `country` where a provider says it), the kind's winning.
 *
 * The alphabets keep a label inside the gateway's username grammar: no `_` (it separates options), no
 * `=` or newline (the Redis store matches `k=v` lines), nothing a URL's user part must escape.
 */
export const LABEL_KEY = /^[a-z][a-z0-9-]{0,30}$/;
export const LABEL_VALUE = /^[A-Za-z0-9.:-]{1,63}$/;
export const LABEL_KEY_TEXT = "1–31 of lower-case letters, digits and '-', starting with a letter";
export const LABEL_VALUE_TEXT = "1–63 of letters, digits, '.', ':' and '-'";

/**
 * Words the gateway's username reads as its own options (src/service/gateway/username-options.ts;
 * a unit test keeps the two lists equal), so no label may be called one. `zone` is a label, but only
 * the member's kind sets it.
 */
export const RESERVED_LABEL_KEYS: readonly string[] = [
    "session",
    "target",
    "retries",
    "ttl",
    "strict",
    "rotate",
    "zone",
];

export type Labels = Record<string, string>;

/** A pool's `labels`: at most 16, each key and value in the alphabets above, no reserved key. */
export const labelsSchema = z
    .record(z.string(), z.string().regex(LABEL_VALUE, { message: `label values must be ${LABEL_VALUE_TEXT}` }))
    // Keys are checked here, not by a key schema: zod reports a bad key as "Invalid key in record",
    // and this names the rule at the key's own path (`egress:pools[0].labels.Country`).
    .superRefine((l, ctx) => {
        const keys = Object.keys(l);
        if (keys.length > 16) ctx.addIssue({ code: "custom", message: "at most 16 labels" });
        for (const k of keys) {
            if (!LABEL_KEY.test(k))
                ctx.addIssue({ code: "custom", path: [k], message: `label names must be ${LABEL_KEY_TEXT}` });
            else if (RESERVED_LABEL_KEYS.includes(k))
                ctx.addIssue({
                    code: "custom",
                    path: [k],
                    message: `label name is reserved (the gateway username's own options and the member's zone: ${RESERVED_LABEL_KEYS.join(", ")})`,
                });
        }
    });

/** Whether `labels` has every `key=value` of `where` (an empty selector matches all). O(|where|). */
export function matchesLabels(labels: Readonly<Labels>, where: readonly (readonly [string, string])[]): boolean {
    for (const [k, v] of where) if (labels[k] !== v) return false;
    return true;
}
