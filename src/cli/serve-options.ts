import type { Command } from "commander";
import { MAX_STICKY_PORTS } from "../service";

/**
 * What `egress serve` accepts: its flags, their help text and their defaults (environment variables
 * included), as `egress serve --help` shows them. serve.ts reads them (serve-flags.ts parses each).
 */

/** Declares every flag of `egress serve` on `serve`. */
export function declareServeFlags(serve: Command): void {
    listenAndLoopOptions(serve);
    gatewayOptions(serve);
    storeOptions(serve);
}

/** Where the API listens, and how often each of the service's loops runs. */
function listenAndLoopOptions(serve: Command): void {
    serve
        .option("-p, --port <port>", "listen port", process.env.EGRESS_PORT ?? "8080")
        .option(
            "--host <addr>",
            "listen address (loopback by default; opening it is a deliberate choice)",
            process.env.EGRESS_HOST ?? "127.0.0.1",
        )
        .option("--tokens <file>", "tokens file (default .egress/tokens-<stack>.json)")
        .option("--no-converge", "do not run `up` at start")
        .option("--probe-interval <seconds>", "health probe interval (0.1 to 3600)", "10")
        .option(
            "--reconcile-interval <seconds>",
            "self-healing: seconds between reconcile rounds, which repair gone and long-unhealthy members (0 = off, at most 86400)",
            process.env.EGRESS_RECONCILE_INTERVAL ?? "60",
        )
        .option(
            "--autoscale-interval <seconds>",
            "autoscaling (pools with `autoscale`): seconds between samples and decisions (0 = off, at most 3600)",
            process.env.EGRESS_AUTOSCALE_INTERVAL ?? "5",
        )
        .option(
            "--rotate-interval <seconds>",
            "rotation by age (pools with `rotateAfterSeconds`): seconds between rounds (0 = off, at most 3600)",
            process.env.EGRESS_ROTATE_INTERVAL ?? "10",
        )
        .option(
            "--autoscale-window <seconds>",
            "autoscaling: seconds the demand signals are averaged over; a scale-up waits one window above target (1 to 3600)",
            process.env.EGRESS_AUTOSCALE_WINDOW ?? "30",
        )
        .option(
            "--timeline-interval <seconds>",
            "how often the dashboard's last-hour timeline samples healthy and leased counts (1 to 3600)",
            "30",
        )
        .option(
            "--provider-check-interval <seconds>",
            "seconds between provider health checks (cloud API, cluster reachability) (0 = off, at most 86400)",
            process.env.EGRESS_PROVIDER_CHECK_INTERVAL ?? "60",
        )
        .option(
            "--provider-check-timeout <seconds>",
            "how long one provider check may take (1 to 600)",
            process.env.EGRESS_PROVIDER_CHECK_TIMEOUT ?? "30",
        );
}

/** The rotating gateway's doors (HTTP, SOCKS5, TLS, sticky ports), who may use them without credentials, and how it treats members and targets. */
function gatewayOptions(serve: Command): void {
    serve
        .option(
            "--gateway-port <port>",
            "the rotating gateway's port: a forward proxy whose every request leases the next member (0 = off)",
            process.env.EGRESS_GATEWAY_PORT ?? "8888",
        )
        .option(
            "--socks-port <port>",
            "the gateway's SOCKS5 front door (RFC 1928 CONNECT, RFC 1929 login with the gateway's proxy username and token) (0 = off)",
            process.env.EGRESS_SOCKS_PORT ?? "0",
        )
        .option(
            "--gateway-tls-port <port>",
            "the gateway as an HTTPS proxy (clients' --proxy https://…), beside the plain --gateway-port; needs --tls-cert and --tls-key (0 = off)",
            process.env.EGRESS_GATEWAY_TLS_PORT ?? "0",
        )
        .option(
            "--tls-cert <file>",
            "PEM certificate (chain): with --tls-key the API serves HTTPS and --gateway-tls-port can run; both files are read again on SIGHUP",
            process.env.EGRESS_TLS_CERT,
        )
        .option("--tls-key <file>", "PEM private key of --tls-cert (unencrypted)", process.env.EGRESS_TLS_KEY)
        .option(
            "--gateway-host <addr>",
            "the listen address of the gateway's ports (HTTP, SOCKS5, TLS, sticky) (loopback by default)",
            process.env.EGRESS_GATEWAY_HOST ?? "127.0.0.1",
        )
        .option(
            "--gateway-allow <cidr=token[:pool]>",
            "a source range whose gateway requests need no proxy credentials (a browser's --proxy-server carries none): they act as the named token of the tokens file or EGRESS_TOKENS (its scopes, its name in logs) in its pool (default: any); credentials sent still win; nothing, loopback included, unless named; repeatable; also $EGRESS_GATEWAY_ALLOW, comma-separated",
            collect,
        )
        .option(
            "--gateway-sticky-ports <from-to[:pool]>",
            `gateway ports on --gateway-host, each one sticky session (port-<n>) of the pool (default: any), for clients that can send nothing but an address; still needs credentials or --gateway-allow; at most ${MAX_STICKY_PORTS} ports a range; repeatable; also $EGRESS_GATEWAY_STICKY_PORTS, comma-separated`,
            collect,
        )
        .option(
            "--gateway-block-header <name[=text]>",
            "a response header that marks a block by the origin (with =text: when its value contains text); repeatable. 403 and 429 always do",
            collect,
            [],
        )
        .option(
            "--gateway-wait <seconds>",
            "how long a gateway request waits, first come first served, for a member when every one it could use is busy; then 503 with Retry-After (0 = at once, up to 60)",
            process.env.EGRESS_GATEWAY_WAIT ?? "5",
        )
        .option(
            "--target-cooldown <seconds>",
            "how long a proxy rests for a target after a lease or gateway request against it (0 to 3600); a pool's restAfterOkSeconds overrides it",
            process.env.EGRESS_TARGET_COOLDOWN ?? "0",
        );
}

/** The serving state's store, and what replicas sharing it need. */
function storeOptions(serve: Command): void {
    serve
        // No default shown from EGRESS_STORE: --help would print the URL, password and all.
        .option(
            "--store <url>",
            "where the serving state of leases lives: memory (default), redis://[user:pass@]host:port[/db] (rediss:// for TLS) or redis+sentinel://[user:pass@]host:port,host:port,…/<master-name>[/db] (rediss+sentinel://), so a restart, another replica or a Redis failover loses nothing; also $EGRESS_STORE",
        )
        .option(
            "--store-grant-replicas <n>",
            "with --store redis…: Redis replicas that must have a lease grant before it is answered (WAIT); a grant none confirms in 250 ms is withdrawn and answered 503, so a failover never leases a member twice (0 to 5; default 1 with redis+sentinel://, else 0); also $EGRESS_STORE_GRANT_REPLICAS",
            process.env.EGRESS_STORE_GRANT_REPLICAS,
        )
        .option(
            "--advertise-url <url>",
            "with --store redis://…: the URL other replicas reach this one's API at (they forward scale, operation and heal requests to the leader); default: its own listen URL",
            process.env.EGRESS_ADVERTISE_URL,
        )
        .option(
            "--engine-kill-grace <seconds>",
            "with --store redis://…: a leader that loses the stack's lock cancels its engine run; one still running this long after is ended, so another replica can take the stack over (1 to 3600)",
            process.env.EGRESS_ENGINE_KILL_GRACE ?? "30",
        );
}

/**
 * A repeatable flag's values. A flag without a default stays undefined while unset, so its environment
 * variable applies (listFlag).
 */
const collect = (v: string, all: string[] | undefined) => [...(all ?? []), v];
