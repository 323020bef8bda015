/** squid configuration shared by the kinds that run squid (kvm and gcp guests, kubernetes pods). */

/** Where squid reads its config: Debian's and Ubuntu's squid package, and the `ubuntu/squid` image. */
export const SQUID_CONF_PATH = "/etc/squid/squid.conf";

/** Where the generated configs keep squid's passwd file (user:hash lines, see squid-passwd.ts). */
export const SQUID_PASSWD_PATH = "/etc/squid/egress.passwd";

/** Debian's and Ubuntu's path of squid's NCSA basic auth helper (the `ubuntu/squid` image's too). */
export const NCSA_AUTH_HELPER = "/usr/lib/squid/basic_ncsa_auth";

/** Proxy basic auth against a passwd file; `helper` and `passwdPath` default to the Debian/Ubuntu paths. */
export interface SquidAuth {
    passwdPath?: string;
    helper?: string;
}

/**
 * The lines of a generated squid.conf, for members without a config of their own: listens on `port`,
 * answers `clientRanges` only (and, with `auth`, only clients that also present the pool's credentials),
 * tunnels (CONNECT) to port 443 only, caches nothing and adds no headers that reveal the client. Kinds add
 * what their environment needs (log targets) and embed it as they must.
 */
export function squidBaseConf(port: number, clientRanges: readonly string[], auth?: SquidAuth): string[] {
    const [clients, ...rules] = squidClientRules(clientRanges, auth);
    return [
        `http_port ${port}`,
        clients,
        "acl SSL_ports port 443",
        "acl CONNECT method CONNECT",
        "http_access deny CONNECT !SSL_ports",
        ...rules,
    ];
}

/**
 * squidBaseConf's own part, for a drop-in beside the distribution's squid.conf, which already defines
 * `SSL_ports` and `CONNECT` and denies CONNECT to other ports (and unsafe ports) before its include:
 * defining them again would only add noise.
 */
export function squidClientRules(clientRanges: readonly string[], auth?: SquidAuth): string[] {
    return [
        `acl egress_clients src ${clientRanges.join(" ")}`,
        ...squidAccessRules("egress_clients", auth),
        "http_access deny all",
        "cache deny all",
        "via off",
        "forwarded_for delete",
    ];
}

/**
 * Who may use the proxy: clients matching the acl `clients`, and with `auth` only those that also present
 * the credentials (both, never either). A client outside the ranges is denied without a 407 challenge,
 * so scanners learn nothing and never get to guess passwords; one inside gets 407 until it authenticates.
 */
export function squidAccessRules(clients: string, auth?: SquidAuth): string[] {
    if (!auth) return [`http_access allow ${clients}`];
    return [
        `auth_param basic program ${auth.helper ?? NCSA_AUTH_HELPER} ${auth.passwdPath ?? SQUID_PASSWD_PATH}`,
        "auth_param basic children 5 startup=1 idle=1",
        "auth_param basic realm egress",
        "auth_param basic credentialsttl 1 hour",
        "acl egress_users proxy_auth REQUIRED",
        `http_access deny !${clients}`,
        "http_access allow egress_users",
    ];
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
export function squidCloudConfig(
    port: number,
    lines: readonly string[],
    opts: { packageUpdate?: boolean; passwd?: string } = {},
): string {
    return [
        "#cloud-config",
        ...(opts.packageUpdate ? ["package_update: true"] : []),
        "packages: [squid]",
        "write_files:",
        `  - path: ${SQUID_DROP_IN_PATH}`,
        "    content: |",
        ...[...(port === DISTRIBUTION_PORT ? [] : [`http_port ${port}`]), ...lines].map((line) => `      ${line}`),
        // Hashes only (squid-passwd.ts). Group `proxy` (squid's user) exists on every Debian and Ubuntu
        // system (base-passwd) before squid is installed, so the file is readable when squid first starts.
        ...(opts.passwd !== undefined
            ? [
                  `  - path: ${SQUID_PASSWD_PATH}`,
                  "    owner: root:proxy",
                  "    permissions: '0640'",
                  "    content: |",
                  ...opts.passwd
                      .trimEnd()
                      .split("\n")
                      .map((l) => `      ${l}`),
              ]
            : []),
        "runcmd:",
        "  - [systemctl, enable, --now, squid]",
        "",
    ].join("\n");
}
