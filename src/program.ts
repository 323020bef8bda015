import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { clearSecret, EgressConfig, parseEgressConfig } from "./config";
import { ProxyPool } from "../kinds/pool";
import { kindOf } from "../kinds/registry";
import { withEntryOptions } from "../kinds/shared/retain";
import type { ProxyCredentials, ProxyMember } from "./model";
import { memberName } from "./config/plan";

export interface ProgramOptions {
    /** Project root: cloud-init files are resolved against it. */
    projectRoot: string;
    /** Machine-local runtime state (local proxy pid/log files). Defaults to `<projectRoot>/.egress/run`. */
    stateDir?: string;
    /** Already-validated config; unset, the program reads `egress:*` from the stack config. */
    config?: EgressConfig;
}

/** Stack outputs of the program. */
export interface ProgramOutputs {
    proxies: pulumi.Output<ProxyMember[]>;
    /**
     * Pool → the credentials its members require (pools with `auth` only), always a secret: encrypted in
     * state, shown by `egress outputs --show-secrets`, read by `egress serve` to hand to lease holders.
     */
    credentials: pulumi.Output<Record<string, ProxyCredentials>>;
    /** Member id → the credentials of its own proxy (kinds with `memberCredentials`), always a secret. */
    memberCredentials: pulumi.Output<Record<string, ProxyCredentials>>;
}

/** Reads and validates `egress:providers` and `egress:pools` from the running stack's config. */
export function readStackConfig(projectRoot: string): EgressConfig {
    const cfg = new pulumi.Config("egress");
    return parseEgressConfig({ providers: cfg.getObject("providers") ?? {}, pools: cfg.getObject("pools") ?? [] }, projectRoot, `stack ${pulumi.getStack()}`);
}

/**
 * The one Pulumi program. `pulumi up` runs it through src/program-main.ts and the automation API runs it
 * inline; both read the same stack config, so a person and the service always converge to the same thing.
 */
export function createProgram(opts: ProgramOptions): () => Promise<ProgramOutputs> {
    return async () => {
        const config = opts.config ?? readStackConfig(opts.projectRoot);
        const context = {
            project: pulumi.getProject(),
            stack: pulumi.getStack(),
            projectRoot: opts.projectRoot,
            stateDir: opts.stateDir ?? path.join(opts.projectRoot, ".egress", "run"),
        };
        // Resources every pool of one provider entry shares (KVM base images), once per entry that has pools.
        const providerShared: Record<string, unknown> = {};
        for (const [providerName, entry] of Object.entries(config.providers)) {
            const users = config.pools.filter((p) => p.provider === providerName);
            const kind = kindOf(entry).components();
            if (kind.createProviderShared && users.length > 0) providerShared[providerName] = kind.createProviderShared(providerName, { providerName, entry, pools: users, context }, withEntryOptions(entry));
        }
        const pools = config.pools.map(
            (pool) => new ProxyPool(pool.name, { pool, providerName: pool.provider, entry: config.providers[pool.provider], context, providerShared: providerShared[pool.provider] }),
        );
        const proxies = pulumi.all(pools.map((p) => p.members)).apply((lists) => lists.flat());
        const credentials = pulumi.secret(
            Object.fromEntries(config.pools.filter((p) => p.auth).map((p) => [p.name, { username: p.auth!.username, password: clearSecret(p.auth!.password, `pools.${p.name}.auth.password`) }])),
        );
        const memberCredentials = pulumi.secret(Object.fromEntries(config.pools.flatMap((p) => {
            const entry = config.providers[p.provider];
            const own = kindOf(entry).memberCredentials?.(entry, p) ?? [];
            return own.flatMap((c, index) => (c ? [[memberName(p.name, index), c] as const] : []));
        })));
        return { proxies, credentials, memberCredentials };
    };
}
