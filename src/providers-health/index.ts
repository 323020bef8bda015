import type { ProviderConfig } from "../config";
import { kindOf } from "../../kinds/registry";
import type { Checker } from "./types";

export type { Checker, CheckVerdict } from "./types";

/** The Checker for one provider entry, by kind. `runDir` is where local proxies keep their files. */
export function checkerFor(providerName: string, entry: ProviderConfig, runDir: string, stack: string): Checker {
    return kindOf(entry).checker(providerName, entry, { runDir, stack });
}
