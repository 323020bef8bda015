export * from "../../src/config";
export { PACKAGE_ROOT as PACKAGE_ROOT_FOR_TESTS } from "../../src/engine/env";
