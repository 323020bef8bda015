import * as fs from "node:fs";
import * as path from "node:path";
import type { Logger } from "pino";
import { ensureDevToken, loadTokens, type StoredToken, tokensFromEnv } from "../http/auth";
import type { ServeOptions } from "./options";
import { allowProblems } from "../gateway/doors";
import { ConfigError } from "../../config";

/**
 * The API tokens: the stack's tokens file plus `EGRESS_TOKENS`. The `dev` stack gets one with every
 * scope on first start, its plain copy in `dev-token` (0600) beside the file; it is never logged.
 * The gateway's allow rules (`--gateway-allow`) must name tokens among them.
 */
export function readTokens(
    opts: ServeOptions,
    runDir: string,
    log: Logger,
): { tokens: StoredToken[]; devTokenFile?: string } {
    const file =
        opts.tokensFile ??
        process.env.EGRESS_TOKENS_FILE ??
        path.join(path.dirname(runDir), `tokens-${opts.stack}.json`);
    let devTokenFile: string | undefined;
    if (opts.stack === "dev" && !process.env.EGRESS_TOKENS) {
        const devToken = ensureDevToken(file);
        if (devToken)
            fs.writeFileSync((devTokenFile = path.join(path.dirname(file), "dev-token")), devToken + "\n", {
                mode: 0o600,
            });
    }
    const tokens = [...(fs.existsSync(file) ? loadTokens(file) : []), ...tokensFromEnv(process.env.EGRESS_TOKENS)];
    if (!tokens.length)
        throw new Error(
            `no API tokens: create ${file} ({"tokens":[{"name","sha256","scopes"}]}) or set EGRESS_TOKENS=name:scope+scope:token`,
        );
    // An allow rule's token must exist now: a typo is a config error (exit 2), not a 407 for every browser.
    const doorProblems = allowProblems(opts.gateway?.allow ?? [], tokens);
    if (doorProblems.length) throw new ConfigError(doorProblems);
    log.info(
        {
            tokens: tokens.map((t) => ({ name: t.name, scopes: t.scopes, gatewayConcurrency: t.gatewayConcurrency })),
            file,
        },
        "loaded API tokens",
    );
    return { tokens, devTokenFile };
}
