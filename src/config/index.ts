export * from "./schema";
export * from "./errors";
export * from "./load";
export * from "./edit";
export * from "./seed";
export * from "./fingerprint";
