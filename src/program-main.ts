/**
 * Entry point for plain `pulumi up` (Pulumi.yaml `main`). The automation API runs the same program inline.
 */
import * as path from "node:path";
import { createProgram } from "./program";
import { plainRunInstallation } from "./engine/plain-run";

export = createProgram({ projectRoot: path.resolve(__dirname, "..", ".."), installation: plainRunInstallation });
