/**
 * Checks real answers against the served OpenAPI document: finds the operation for a method and a
 * concrete path, the response for the status, and validates the body with a small JSON Schema
 * (2020-12 subset) checker. Stricter than the schema on one point, on purpose: a property the document
 * does not declare is an error, so an undocumented field cannot sneak into an answer.
 */

type Schema = Record<string, any>;
export interface OpenApiDoc {
    paths: Record<string, Record<string, any>>;
    components: { schemas?: Record<string, Schema> };
}

/** `/v1/pools/web/replicas` → `/v1/pools/{pool}/replicas` (the first template that matches). */
export function templateOf(doc: OpenApiDoc, path: string): string | undefined {
    const bare = path.split("?")[0];
    return Object.keys(doc.paths).find((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(bare));
}

function resolve(doc: OpenApiDoc, s: Schema): Schema {
    while (s.$ref) s = doc.components.schemas![String(s.$ref).replace("#/components/schemas/", "")];
    return s;
}

const typeOf = (v: unknown) =>
    v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v;

/** Problems of `value` against `schema`, each with its JSON path; empty when it validates. */
export function validate(doc: OpenApiDoc, schema: Schema, value: unknown, at = "$"): string[] {
    const s = resolve(doc, schema);
    const out: string[] = [];
    if (s.anyOf || s.oneOf) {
        const alts: Schema[] = s.anyOf ?? s.oneOf;
        const fits = alts.filter((a) => validate(doc, a, value, at).length === 0).length;
        if (s.oneOf ? fits !== 1 : fits === 0) out.push(`${at}: matches ${fits} of ${alts.length} alternatives`);
        return out;
    }
    if (s.const !== undefined && value !== s.const) out.push(`${at}: must be ${JSON.stringify(s.const)}`);
    if (s.enum && !s.enum.includes(value)) out.push(`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(s.enum)}`);
    if (s.type) {
        const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
        const t = typeOf(value);
        if (!types.includes(t) && !(t === "integer" && types.includes("number")))
            return [`${at}: expected ${types.join("|")}, got ${t}`];
    }
    if (typeof value === "string") {
        if (s.minLength !== undefined && value.length < s.minLength) out.push(`${at}: shorter than ${s.minLength}`);
        if (s.maxLength !== undefined && value.length > s.maxLength) out.push(`${at}: longer than ${s.maxLength}`);
    }
    if (typeof value === "number") {
        if (s.minimum !== undefined && value < s.minimum) out.push(`${at}: below ${s.minimum}`);
        if (s.maximum !== undefined && value > s.maximum) out.push(`${at}: above ${s.maximum}`);
    }
    if (Array.isArray(value) && s.items) value.forEach((v, i) => out.push(...validate(doc, s.items, v, `${at}[${i}]`)));
    if (typeOf(value) === "object") {
        const obj = value as Record<string, unknown>;
        for (const k of s.required ?? []) if (!(k in obj)) out.push(`${at}.${k}: required`);
        for (const [k, v] of Object.entries(obj)) {
            if (s.properties?.[k]) out.push(...validate(doc, s.properties[k], v, `${at}.${k}`));
            else if (s.additionalProperties && typeof s.additionalProperties === "object")
                out.push(...validate(doc, s.additionalProperties, v, `${at}.${k}`));
            else if (
                s.type === "object" &&
                !(s.additionalProperties === true || (s.additionalProperties === undefined && !s.properties))
            )
                out.push(`${at}.${k}: not in the document`);
        }
    }
    return out;
}

/**
 * The response of `method path` with `status` as documented, or a problem: no such operation, an
 * undocumented status, or no schema for the content type.
 */
export function responseSchema(
    doc: OpenApiDoc,
    method: string,
    path: string,
    status: number,
    contentType: string,
): { op: string; schema?: Schema; itemSchema?: Schema } | { problem: string } {
    const t = templateOf(doc, path);
    const op = t && doc.paths[t][method.toLowerCase()];
    if (!op) return { problem: `${method} ${path}: not in the document` };
    const res = op.responses[String(status)];
    if (!res)
        return {
            problem: `${method} ${t}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(", ")})`,
        };
    const type = contentType.split(";")[0].trim();
    const media = res.content?.[type];
    if (!media)
        return {
            problem: `${method} ${t} ${status}: content type ${type} is not documented (documented: ${Object.keys(res.content ?? {}).join(", ") || "none"})`,
        };
    return { op: op.operationId, schema: media.schema, itemSchema: media.itemSchema };
}
