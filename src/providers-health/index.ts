import type { Logger } from "pino";
import type { ProviderConfig } from "../config";
import { kindOf } from "../../kinds/registry";
import type { Checker } from "./types";

export type { Checker, CheckVerdict } from "./types";

/** The Checker for one provider entry, by kind. `runDir` is where local proxies keep their files; `log` gets its debug lines. */
export function checkerFor(providerName: string, entry: ProviderConfig, runDir: string, stack: string, log?: Logger): Checker {
    return kindOf(entry).checker(providerName, entry, { runDir, stack }, { log });
}
