export * from "./member";
export * from "./installation";
export * from "./fields";
export * from "./cidr";
export * from "./pool";
export * from "./plan";
export * from "./cloud-init";
export * from "./problems";
