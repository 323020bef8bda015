export * from "./driver";
export * from "./env";
export * from "./progress";
