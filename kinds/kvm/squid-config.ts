/** The KVM kind's default squid config: user-data for members without cloud-init of their own. */
import { squidCloudConfig } from "../shared/squid";

/**
 * Default user-data when a pool sets no cloud-init: squid on the member's port, open to the host's networks
 * (Debian's `localnet`), configured before it starts and never restarted (squidCloudConfig).
 */
export function defaultUserData(port: number): string {
    return squidCloudConfig(port, ["visible_hostname egress-proxy", "http_access allow localnet"]);
}
