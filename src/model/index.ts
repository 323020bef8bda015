export * from "./member";
