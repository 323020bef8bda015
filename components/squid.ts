/** squid configuration shared by the kinds that run squid (gcp, kubernetes). */

/** Where squid reads its config: Debian's and Ubuntu's squid package, and the `ubuntu/squid` image. */
export const SQUID_CONF_PATH = "/etc/squid/squid.conf";

/**
 * The lines of a generated squid.conf, for members without a config of their own: listens on `port`,
 * answers `clientRanges` only, tunnels (CONNECT) to port 443 only, caches nothing and adds no headers that
 * reveal the client. Kinds add what their environment needs (log targets) and embed it as they must.
 */
export function squidBaseConf(port: number, clientRanges: readonly string[]): string[] {
    return [
        `http_port ${port}`,
        `acl egress_clients src ${clientRanges.join(" ")}`,
        "acl SSL_ports port 443",
        "acl CONNECT method CONNECT",
        "http_access deny CONNECT !SSL_ports",
        "http_access allow egress_clients",
        "http_access deny all",
        "cache deny all",
        "via off",
        "forwarded_for delete",
    ];
}
