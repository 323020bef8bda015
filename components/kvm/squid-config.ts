/** The KVM kind's default squid config: user-data for members without cloud-init of their own. */
import { squidAccessRules, squidCloudConfig } from "../shared/squid";

/**
 * Default user-data when a pool sets no cloud-init: squid on the member's port, open to the host's networks
 * (Debian's `localnet`) — with `passwd` (the pool's credentials, hashed), to those presenting the
 * credentials too — configured before it starts and never restarted (squidCloudConfig).
 */
export function defaultUserData(port: number, passwd?: string): string {
    const auth = passwd === undefined ? undefined : {};
    return squidCloudConfig(port, ["visible_hostname egress-proxy", ...squidAccessRules("localnet", auth)], { passwd });
}
