/**
 * The automation API and the Pulumi program, loaded on first use. Requiring either loads the whole Pulumi
 * SDK (gRPC, the runtime): about 1.2 s of CPU, which every command that never runs the engine (`--help`,
 * `--version`, `scale`'s input checks, `doctor`, `serve`'s replicas until they lead) paid at start-up, and
 * every CLI call in the tests with it. The error classes come from the API's own small `errors` module,
 * so `instanceof` checks cost nothing.
 */
import type * as Automation from "@pulumi/pulumi/automation";
import type * as Program from "../program";

let api: typeof Automation | undefined;
let program: typeof Program | undefined;

/** `@pulumi/pulumi/automation`, required the first time an engine command is built. */
export function automation(): typeof Automation {
    return (api ??= require("@pulumi/pulumi/automation") as typeof Automation);
}

/** src/program.ts (which imports `@pulumi/pulumi` and every component), required when a stack is opened. */
export function programModule(): typeof Program {
    return (program ??= require("../program") as typeof Program);
}
