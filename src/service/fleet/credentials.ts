import type { ProxyCredentials, ProxyMember } from "../../model";

/**
 * The URL to send traffic through `member`: `http://user:pass@host:port` when it requires credentials and
 * they are known, else its plain `url`. The one place a member URL gets credentials: lease answers,
 * discovery for scopes that may see them, and the gateway's upstream (via Fleet.upstreamUrl).
 * Never log what this returns.
 */
export function memberUpstreamUrl(
    member: Pick<ProxyMember, "url" | "auth">,
    credentials: ProxyCredentials | undefined,
): string {
    if (!member.auth || !credentials || !member.url) return member.url;
    const userinfo = `${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@`;
    return member.url.replace(/^(https?:\/\/)/, `$1${userinfo}`);
}
