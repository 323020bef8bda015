/**
 * Request and response bodies of the HTTP API, by room. Handlers validate with these, and
 * /v1/openapi.json is generated from the same objects, so the document cannot drift from what is enforced.
 */
export * from "./common";
export * from "./leases";
export * from "./control";
export * from "./operations";
