import type { Checker, CheckerOptions, CheckVerdict } from "../kind";
import { checkEach } from "../shared/check-each";
import { portAnswers } from "../shared/net";
import { parseStaticProxy, StaticProviderConfig } from "./config";

/**
 * Provider health for `type: static`: every listed proxy accepts a TCP connection (one verdict per
 * proxy, `host:port`). A connect only: no request goes through the proxy, so no test traffic leaves for
 * anywhere. Whether a proxy forwards is what the member health probes judge.
 */
export function staticChecker(
    providerName: string,
    entry: StaticProviderConfig,
    options: CheckerOptions = {},
): Checker {
    const timeoutMs = options.timeoutMs ?? 5000;
    async function checkOne(listed: StaticProviderConfig["proxies"][number], i: number): Promise<CheckVerdict> {
        let t;
        try {
            t = parseStaticProxy(listed);
        } catch (e) {
            return {
                target: `proxies[${i}]`,
                ok: false,
                stage: "config",
                message: `provider \`${providerName}\` proxies[${i}]: ${(e as Error).message}`,
            };
        }
        if (!t)
            return {
                target: `proxies[${i}]`,
                ok: false,
                stage: "config",
                message: `provider \`${providerName}\` proxies[${i}] is still encrypted: the service reads it decrypted`,
            };
        const target = `${t.host}:${t.port}`;
        let why = "";
        const started = Date.now();
        if (await portAnswers(t.port, timeoutMs, t.host, (r) => (why = r)))
            return {
                target,
                ok: true,
                message: `provider \`${providerName}\`: ${t.scheme} proxy ${target} accepts connections`,
                details: { ms: Date.now() - started },
            };
        return {
            target,
            ok: false,
            stage: "tcp",
            message: `provider \`${providerName}\`: cannot reach proxy ${target}: ${why}; check that it runs and the address in \`proxies[${i}]\``,
        };
    }
    return {
        provider: providerName,
        kind: entry.type,
        check: async () => checkEach(entry.proxies, checkOne),
    };
}
