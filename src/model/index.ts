export * from "./member";
export * from "./installation";
