/**
 * The Python client's routes and fields (clients/python/egress_client/api.py `contract()`) checked
 * against the served /v1/openapi.json: every route, body field, answer field, outcome, status and
 * error code it uses must be in the document, so the client cannot drift from the service.
 */
import type { OpenApiDoc } from "./openapi-check";

type Schema = Record<string, any>;
export interface PyContract {
    routes: Record<string, [string, string]>;
    requestFields: Record<string, string[]>;
    responseFields: Record<string, [number, string[]]>;
    outcomes: string[];
    settled: string[];
    errorCodes: [string, number, string][];
}

function resolve(doc: OpenApiDoc, s: Schema | undefined): Schema | undefined {
    while (s?.$ref) s = doc.components.schemas?.[String(s.$ref).replace("#/components/schemas/", "")];
    return s;
}

/** The schema at a dotted path (`a.b`, `a[].b`), through $refs and single-branch anyOf/allOf. */
function at(doc: OpenApiDoc, schema: Schema | undefined, dotted: string): Schema | undefined {
    let s = resolve(doc, schema);
    for (const part of dotted.split(".")) {
        const name = part.replace(/\[\]$/, "");
        s = resolve(doc, s?.properties?.[name]);
        if (part.endsWith("[]")) s = resolve(doc, s?.items);
    }
    return s;
}

/** Every problem with `c` against `doc`; empty when the client matches the service. */
export function contractProblems(doc: OpenApiDoc, c: PyContract): string[] {
    const out: string[] = [];
    const op = (name: string) => {
        const [method, path] = c.routes[name];
        return doc.paths[path]?.[method.toLowerCase()];
    };
    for (const [name, [method, path]] of Object.entries(c.routes))
        if (!op(name)) out.push(`${name}: ${method} ${path} is not in the document`);
    for (const [name, fields] of Object.entries(c.requestFields)) {
        const body = resolve(doc, op(name)?.requestBody?.content?.["application/json"]?.schema);
        for (const f of fields)
            if (!body?.properties?.[f]) out.push(`${name}: request field ${f} is not in the document`);
    }
    for (const [name, [status, fields]] of Object.entries(c.responseFields)) {
        const res = op(name)?.responses?.[String(status)];
        if (!res) out.push(`${name}: status ${status} is not documented`);
        const schema = res?.content?.["application/json"]?.schema;
        for (const f of fields) if (!at(doc, schema, f)) out.push(`${name}: answer field ${f} is not in the document`);
    }
    const outcome = resolve(doc, op("release")?.requestBody?.content?.["application/json"]?.schema)?.properties
        ?.outcome;
    if (JSON.stringify(outcome?.enum) !== JSON.stringify(c.outcomes))
        out.push(`outcomes ${JSON.stringify(c.outcomes)} differ from the document's ${JSON.stringify(outcome?.enum)}`);
    const statuses: string[] =
        at(doc, op("operation")?.responses?.["200"]?.content?.["application/json"]?.schema, "operation.status")?.enum ??
        [];
    for (const s of c.settled) if (!statuses.includes(s)) out.push(`operation status ${s} is not in the document`);
    for (const [name, status, code] of c.errorCodes) {
        const text = JSON.stringify(op(name)?.responses?.[String(status)] ?? "");
        if (!text.includes(code)) out.push(`${name}: ${status} ${code} is not documented`);
    }
    return out;
}
