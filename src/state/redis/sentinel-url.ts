/**
 * `redis+sentinel://[user:pass@]host1:port1,host2:port2/<master-name>[/db]` (`rediss+sentinel://` for TLS):
 * the sentinels to ask, and the name of the primary they watch. Not a WHATWG URL (a comma-separated host
 * list has no port a URL parser accepts), so it is cut by hand, one issue per broken part.
 */

export interface SentinelAddress {
    host: string;
    port: number;
}

export interface SentinelSpec {
    tls: boolean;
    username?: string;
    password?: string;
    sentinels: SentinelAddress[];
    /** The master name of `sentinel monitor <name> …`. */
    name: string;
    db: number;
}

const SCHEME = /^(rediss?)\+sentinel:\/\//i;

export function isSentinelUrl(raw: string): boolean {
    return SCHEME.test(raw.trim());
}

/** `[v6]:port` or `host:port`; a port is required, as in the plain URL (a silent 26379 hides a typo). */
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d+)$/;
const MASTER_NAME = /^[A-Za-z0-9._-]+$/;

/** The parts, or the list of what is wrong with them (never quoting the password). */
export function parseSentinelUrl(raw: string): { spec: SentinelSpec } | { issues: string[] } {
    const m = SCHEME.exec(raw);
    if (!m) return { issues: ["is not a redis+sentinel:// URL"] };
    const issues: string[] = [];
    let rest = raw.slice(m[0].length);
    if (/[?#]/.test(rest)) {
        issues.push("takes no ?query or #fragment");
        rest = rest.replace(/[?#].*$/, "");
    }
    const slash = rest.indexOf("/");
    const authority = slash < 0 ? rest : rest.slice(0, slash);
    const path = slash < 0 ? [] : rest.slice(slash + 1).split("/");
    const at = authority.lastIndexOf("@");
    const { username, password } = credentials(at < 0 ? undefined : authority.slice(0, at));
    const sentinels = sentinelList(at < 0 ? authority : authority.slice(at + 1), issues);
    const name = path[0] ?? "";
    if (name === "") issues.push("has no master name (…/<master-name>[/db] after the sentinels)");
    else if (!MASTER_NAME.test(name)) issues.push(`master name ${JSON.stringify(name)} is not letters, digits, . _ -`);
    const db = path[1] ?? "";
    if (db !== "" && !/^([0-9]|1[0-5])$/.test(db))
        issues.push(`database ${JSON.stringify(db)} is not a number from 0 to 15`);
    if (path.length > 2) issues.push("has more than /<master-name>/<db> in its path");
    if (issues.length) return { issues };
    return {
        spec: { tls: m[1].toLowerCase() === "rediss", username, password, sentinels, name, db: Number(db || 0) },
    };
}

function credentials(userinfo: string | undefined): { username?: string; password?: string } {
    if (userinfo === undefined) return {};
    const colon = userinfo.indexOf(":");
    const user = decode(colon < 0 ? userinfo : userinfo.slice(0, colon));
    const pass = colon < 0 ? undefined : decode(userinfo.slice(colon + 1));
    return { username: user || undefined, password: pass || undefined };
}

function decode(s: string): string {
    try {
        return decodeURIComponent(s);
    } catch {
        return s; // a stray % is taken as it is, as Redis would see it typed
    }
}

function sentinelList(hosts: string, issues: string[]): SentinelAddress[] {
    if (hosts === "") {
        issues.push("has no sentinel host:port");
        return [];
    }
    const out: SentinelAddress[] = [];
    for (const part of hosts.split(",")) {
        const hp = HOST_PORT.exec(part);
        const port = hp ? Number(hp[2]) : NaN;
        if (part === "") issues.push("has an empty sentinel between commas");
        else if (!hp) issues.push(`sentinel ${JSON.stringify(part)} is not host:port`);
        else if (!(port >= 1 && port <= 65535))
            issues.push(`sentinel ${JSON.stringify(part)} has port ${hp[2]}, not 1 to 65535`);
        else out.push({ host: hp[1].replace(/^\[(.*)\]$/, "$1"), port });
    }
    return out;
}
