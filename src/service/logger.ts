// Moved to src/log (the local proxy child logs through it too); kept for importers in src/service.
export * from "../log/logger";
