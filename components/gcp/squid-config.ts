/** The GCE kind's default squid config: user-data for members without cloud-init of their own. */
import { squidClientRules, squidCloudConfig } from "../shared/squid";

/**
 * User-data for members without cloud-init of their own: squid on `port`, answering only the pool's
 * allowed source ranges (the firewall already filters; squid refusing others is the second lock) and, with
 * `passwd` (the pool's credentials, hashed), only to clients that authenticate as well.
 * Configured before squid starts and never restarted, as on KVM (squidCloudConfig): a restart would
 * darken a proxy already published for squid's 30 s shutdown_lifetime.
 */
export function defaultCloudInit(port: number, allowedSourceRanges: readonly string[], passwd?: string): string {
    const auth = passwd === undefined ? undefined : {};
    return squidCloudConfig(port, ["visible_hostname egress-proxy", ...squidClientRules(allowedSourceRanges, auth)], {
        packageUpdate: true,
        passwd,
    });
}
