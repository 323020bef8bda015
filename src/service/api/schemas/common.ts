/** Shapes every route shares: times, the error body and `parseOr400` (a 400 whose details list each field and rule). */
import { z } from "zod";
import { HttpError } from "../../http/errors";
import { ERROR_CODES } from "../../http/catalogue";

export const isoTime = z.string().describe("RFC 3339 time");

export const okResponse = z.object({ ok: z.literal(true) });

export const errorSchema = z
    .object({
        error: z.object({
            code: z.enum(ERROR_CODES).describe("Machine-readable; docs/api.md lists when each is used"),
            message: z.string(),
            details: z.unknown().optional(),
        }),
    })
    .meta({ id: "Error" });

/** Parses `value` or throws a 400 whose details list each field and rule. */
export function parseOr400<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
    const r = schema.safeParse(value ?? {});
    if (r.success) return r.data;
    const details = r.error.issues.map((i) => ({
        field: i.path.join(".") || "(body)",
        rule: i.code === "unrecognized_keys" ? `unknown field(s) ${i.keys.join(", ")}` : i.message,
    }));
    throw new HttpError(
        "invalid_request",
        `invalid ${what}: ${details.map((d) => `${d.field}: ${d.rule}`).join("; ")}`,
        details,
    );
}
