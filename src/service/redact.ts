// Moved to src/log (the local proxy child and config errors use it too); kept for importers in src/service.
export * from "../log/redact";
