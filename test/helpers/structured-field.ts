/**
 * A reader for an RFC 8941 structured-field Item (bare item and parameters), as a client would read
 * `Proxy-Status` (RFC 9209): strict, so a test fails on a field that a real parser would reject.
 * Covers tokens, strings, integers, decimals and booleans; not byte sequences, dates or inner lists.
 */
export type BareItem = string | number | boolean | { token: string };
export interface Item {
    value: BareItem;
    params: Record<string, BareItem>;
}

export function parseItem(field: string): Item {
    const p = { s: field, i: 0 };
    skipSp(p);
    const value = bareItem(p);
    const params: Record<string, BareItem> = {};
    while (p.s[p.i] === ";") {
        p.i++;
        skipSp(p);
        const key = /^[a-z*][a-z0-9_\-.*]*/.exec(p.s.slice(p.i))?.[0];
        if (!key) throw new Error(`bad parameter key at ${p.i} in ${JSON.stringify(field)}`);
        p.i += key.length;
        if (p.s[p.i] === "=") {
            p.i++;
            params[key] = bareItem(p);
        } else params[key] = true;
    }
    skipSp(p);
    if (p.i !== p.s.length) throw new Error(`trailing characters at ${p.i} in ${JSON.stringify(field)}`);
    return { value, params };
}

function skipSp(p: { s: string; i: number }): void {
    while (p.s[p.i] === " ") p.i++;
}

function bareItem(p: { s: string; i: number }): BareItem {
    const rest = p.s.slice(p.i);
    if (rest[0] === '"') {
        let out = "";
        for (p.i++; p.i < p.s.length; p.i++) {
            const c = p.s[p.i];
            if (c === "\\") {
                const next = p.s[++p.i];
                if (next !== '"' && next !== "\\") throw new Error(`bad escape at ${p.i}`);
                out += next;
            } else if (c === '"') {
                p.i++;
                return out;
            } else if (c < " " || c > "~") throw new Error(`non-printable character in string at ${p.i}`);
            else out += c;
        }
        throw new Error("unterminated string");
    }
    if (rest[0] === "?") {
        p.i += 2;
        if (rest[1] === "1") return true;
        if (rest[1] === "0") return false;
        throw new Error(`bad boolean at ${p.i}`);
    }
    const num = /^-?\d{1,15}(\.\d{1,3})?/.exec(rest)?.[0];
    if (num) {
        p.i += num.length;
        return Number(num);
    }
    const token = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(rest)?.[0];
    if (!token) throw new Error(`no bare item at ${p.i} in ${JSON.stringify(p.s)}`);
    p.i += token.length;
    return { token };
}
