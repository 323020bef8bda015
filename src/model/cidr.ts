import * as net from "node:net";
import { z } from "zod";

/** Parses `addr/prefix`; undefined when either half is invalid (octets > 255, prefix out of range...). */
export function parseCidr(cidr: string): { family: 4 | 6; prefix: number } | undefined {
    const m = /^([^/\s]+)\/(\d{1,3})$/.exec(cidr);
    if (!m) return undefined;
    const family = net.isIPv4(m[1]) ? 4 : net.isIPv6(m[1]) ? 6 : 0;
    const prefix = Number(m[2]);
    if (!family || prefix > (family === 4 ? 32 : 128)) return undefined;
    return { family, prefix };
}

/** Shortest prefix an allowed source range may have: anything broader is a proxy for a continent. */
export const MIN_PREFIX = { 4: 8, 6: 16 } as const;

/** True for a range that admits the whole internet, in any spelling (`0.0.0.0/0`, `::/0`, `0:0::0/0`, `10.1.2.3/0`). */
export function isOpenRange(cidr: string): boolean {
    return parseCidr(cidr)?.prefix === 0;
}

/**
 * Source ranges allowed to reach a proxy. Required, valid CIDRs, never open: an open proxy on a public
 * IP is found and abused within hours. Ranges broader than /8 (IPv4) or /16 (IPv6) are refused too, so
 * splitting the internet into halves (`0.0.0.0/1` + `128.0.0.0/1`) does not get around the rule.
 */
export const allowedSourceRangesSchema = () =>
    z
        .array(
            z
                .string()
                .refine((c) => parseCidr(c) !== undefined, { message: "must be a CIDR range such as 203.0.113.7/32" }),
        )
        .min(1, { message: "must list at least one source range" })
        .refine((r) => !r.some(isOpenRange), {
            message: "must not contain 0.0.0.0/0 or ::/0 (that makes an open proxy)",
        })
        .refine(
            (r) =>
                r.every((c) => {
                    const p = parseCidr(c);
                    return !p || p.prefix === 0 || p.prefix >= MIN_PREFIX[p.family];
                }),
            {
                message: `must not contain ranges broader than /${MIN_PREFIX[4]} (IPv4) or /${MIN_PREFIX[6]} (IPv6): that makes a practically open proxy`,
            },
        );
