export * from "./driver";
export * from "./env";
export * from "./progress";
export * from "./writer-lock";
export * from "./process-identity";
export * from "./checkpoint";
export * from "./forget";
export * from "./member-urns";
