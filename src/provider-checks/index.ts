import type { ProviderConfig } from "../config";
import { kindOf } from "../../components/registry";
import type { Checker, CheckerOptions } from "../../components/kind";

export type { Checker, CheckVerdict } from "../../components/kind";

/**
 * The Checker for one provider entry, by kind. `runDir` is where local proxies keep their files;
 * `options.timeoutMs` is the per-target timeout (`--provider-check-timeout`), `options.log` gets its
 * debug lines (KVM: each virsh call).
 */
export function checkerFor(
    providerName: string,
    entry: ProviderConfig,
    runDir: string,
    stack: string,
    options?: CheckerOptions,
): Checker {
    return kindOf(entry).checker(providerName, entry, { runDir, stack }, options);
}
