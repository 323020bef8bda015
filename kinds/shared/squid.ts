/** squid configuration shared by the kinds that run squid (kvm and gcp guests, kubernetes pods). */

/** Where squid reads its config: Debian's and Ubuntu's squid package, and the `ubuntu/squid` image. */
export const SQUID_CONF_PATH = "/etc/squid/squid.conf";

/**
 * The lines of a generated squid.conf, for members without a config of their own: listens on `port`,
 * answers `clientRanges` only, tunnels (CONNECT) to port 443 only, caches nothing and adds no headers that
 * reveal the client. Kinds add what their environment needs (log targets) and embed it as they must.
 */
export function squidBaseConf(port: number, clientRanges: readonly string[]): string[] {
    const [clients, ...rules] = squidClientRules(clientRanges);
    return [`http_port ${port}`, clients, "acl SSL_ports port 443", "acl CONNECT method CONNECT", "http_access deny CONNECT !SSL_ports", ...rules];
}

/**
 * squidBaseConf's own part, for a drop-in beside the distribution's squid.conf, which already defines
 * `SSL_ports` and `CONNECT` and denies CONNECT to other ports (and unsafe ports) before its include:
 * defining them again would only add noise.
 */
export function squidClientRules(clientRanges: readonly string[]): string[] {
    return [`acl egress_clients src ${clientRanges.join(" ")}`, "http_access allow egress_clients", "http_access deny all", "cache deny all", "via off", "forwarded_for delete"];
}

/** Debian's and Ubuntu's squid.conf includes this directory (before its own `http_access` rules). */
export const SQUID_DROP_IN_PATH = "/etc/squid/conf.d/egress.conf";

/** Debian's and Ubuntu's squid.conf already listens on this port: repeating it is an error in squid's log. */
const DISTRIBUTION_PORT = 3128;

/**
 * Default cloud-config for a guest that installs squid from its distribution (kvm, gcp): `lines` go to a
 * drop-in (SQUID_DROP_IN_PATH), with `http_port` unless it is the distribution's own.
 *
 * Configured before squid starts, never restarted: write_files runs in cloud-init's init (network) stage,
 * which is ordered before network-online.target, which squid.service waits for; on an image without squid,
 * `packages` installs (and starts) it later, in the config stage, after the file exists (the drop-in is no
 * conffile of the package, so dpkg has nothing to ask). `enable --now` starts it only if it is not running,
 * so a proxy already published never goes dark: a restart waits out squid's 30 s shutdown_lifetime.
 */
export function squidCloudConfig(port: number, lines: readonly string[], opts: { packageUpdate?: boolean } = {}): string {
    return [
        "#cloud-config",
        ...(opts.packageUpdate ? ["package_update: true"] : []),
        "packages: [squid]",
        "write_files:",
        `  - path: ${SQUID_DROP_IN_PATH}`,
        "    content: |",
        ...[...(port === DISTRIBUTION_PORT ? [] : [`http_port ${port}`]), ...lines].map((line) => `      ${line}`),
        "runcmd:",
        "  - [systemctl, enable, --now, squid]",
        "",
    ].join("\n");
}
