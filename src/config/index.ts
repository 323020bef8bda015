export * from "./schema";
export * from "./errors";
export * from "./load";
export * from "./plan";
export * from "./cloud-init";
export * from "./names";
export * from "./edit";
export * from "./seed";
