/** Bodies of the crawler's routes: proxies, leases and their release, blocks, whoami and echo. */
import { z } from "zod";
import { SCOPES } from "../../http/auth";
import { sessionKeySchema } from "../../leases/session-key";
import { isoTime } from "./common";
import { LABEL_KEY, LABEL_KEY_TEXT, LABEL_VALUE, LABEL_VALUE_TEXT } from "../../../model/labels";

/** A member selector: label → the value members must have (`{country: "de"}`), as the gateway's `_<label>_<value>`. */
export const whereSchema = z
    .record(
        z.string().regex(LABEL_KEY, { message: `label names are ${LABEL_KEY_TEXT}` }),
        z.string().regex(LABEL_VALUE, { message: `label values are ${LABEL_VALUE_TEXT}` }),
    )
    .refine((w) => Object.keys(w).length <= 16, { message: "at most 16 labels" });

export const leaseBody = z.strictObject({
    pool: z.string().min(1).max(63).optional().describe("Only lease from this pool"),
    target: z.string().min(1).max(253).optional().describe("Host the crawler will visit; enables per-target cooldown"),
    ttlSeconds: z
        .number()
        .int({ message: "must be a whole number" })
        .min(1)
        .max(3600)
        .optional()
        .describe("Lease lifetime; default 300"),
    zone: z
        .string()
        .min(1)
        .max(63)
        .optional()
        .describe(
            "Only a proxy in this zone (the `zone` of GET /v1/proxies). A zone no member of the pool has is a 400 naming the zones there are; a known zone with nothing free is a 503",
        ),
    where: whereSchema
        .optional()
        .describe(
            'Only a proxy whose labels (its pool\'s `labels`, and its `zone`) have every `label: value` here, e.g. `{"country": "de"}`; `zone` is `where.zone`. A label or value no member of the pool has had is a 400 `unknown_label` naming the known ones; a known one with nothing free is a 503',
        ),
    session: sessionKeySchema
        .optional()
        .describe(
            "Sticky session key (scoped to `pool`): its leases get the same proxy while it stays healthy, not draining, not leased by someone else and not blocked for `target`; otherwise the session moves (`rebound: true`). Forgotten after the pool's `sessionTtlSeconds` (default 1800) without a live lease",
        ),
});

export const releaseBody = z.strictObject({
    outcome: z
        .enum(["ok", "blocked", "error"])
        .describe(
            "ok: fine; blocked: the target blocked this proxy (longer target cooldown); error: the proxy failed (counts against health)",
        ),
});

/** POST /v1/blocks: a block the client saw, reported against the member the gateway used for it. */
export const blockBody = z.strictObject({
    pool: z.string().min(1).max(63).describe("The pool of the gateway request (its username's pool)"),
    target: z.string().min(1).max(253).describe("The host that blocked (the request's host, or its `_target_` option)"),
    session: z.string().min(1).max(64).optional().describe("The request's `_session_` key, if it had one"),
    proxy: z
        .string()
        .min(1)
        .max(253)
        .optional()
        .describe(
            "The member that served the blocked answer (its `X-Egress-Proxy` header). It must be one that served this token's (pool, session, target) lately; unset: the last one that did",
        ),
});

/** POST /v1/blocks → 200 */
export const blockResponse = z.object({
    blocked: z.object({
        proxy: z.string().describe("The member that served the request; it rests for the target"),
        pool: z.string(),
        target: z.string(),
        session: z.string().optional(),
        until: isoTime.describe(
            "When the member may serve the target again (the blocked cooldown: 60 s, doubling per repeated block, at most 1 h)",
        ),
    }),
});

export const proxiesQuery = z.strictObject({
    pool: z.string().min(1).optional().describe("Only this pool"),
    state: z.enum(["healthy", "unhealthy", "unknown"]).optional(),
    lifecycle: z.enum(["provisioning", "ready", "draining", "failed"]).optional(),
    zone: z.string().min(1).optional().describe("Only this zone"),
});

export const proxySchema = z
    .object({
        id: z.string(),
        pool: z.string(),
        provider: z.string(),
        kind: z.string(),
        index: z.number(),
        host: z.string(),
        port: z.number(),
        zone: z.string(),
        url: z
            .string()
            .describe(
                "http://host:port, what a crawler sets as its proxy. When the proxy requires credentials (`auth`), it carries them (http://user:pass@host:port) for tokens with the `lease` or `admin` scope only",
            ),
        auth: z
            .boolean()
            .optional()
            .describe("True when the proxy requires credentials (proxy basic auth); absent otherwise"),
        labels: z
            .record(z.string(), z.string())
            .optional()
            .describe(
                "What label selectors match (`where` on POST /v1/leases, `_<label>_<value>` in a gateway username): its pool's `labels`, what its kind knows (a GCE member's `region`), and its `zone`",
            ),
        health: z.enum(["healthy", "unhealthy", "unknown"]),
        egressIp: z.string().optional(),
        probeLatencyMs: z
            .number()
            .optional()
            .describe("Round trip of the last health probe through this proxy, in milliseconds"),
        leased: z.boolean(),
        lifecycle: z
            .enum(["provisioning", "ready", "draining", "failed"])
            .describe(
                "provisioning: no address or no probe verdict yet; ready: healthy; draining: an operation removes or replaces it (never leased again; leases run until released or drainingUntil); failed: unhealthy, or an operation failed on it",
            ),
        lastError: z
            .string()
            .optional()
            .describe(
                "The last probe error while probes fail, or the last failed operation's error naming this member, whichever is newer",
            ),
        drainingUntil: z
            .string()
            .optional()
            .describe(
                "While draining: when a lease still running on it is ended (then its release answers 410 proxy_removed)",
            ),
    })
    .meta({ id: "Proxy" });

/** GET /v1/proxies */
export const proxiesResponse = z.object({
    proxies: z.array(proxySchema),
    verdicts: z
        .object({
            decidedBy: z
                .string()
                .optional()
                .describe(
                    "The replica whose probes decided the health shown (the leader); absent before the first read",
                ),
            self: z.boolean().describe("Whether that is the replica answering (it leads)"),
            publishedAt: z
                .string()
                .optional()
                .describe("On a follower: when the leader last published its verdicts (the store's clock)"),
            stale: z
                .string()
                .optional()
                .describe(
                    "Why the health shown may be old (the store cannot be read, the leader stopped publishing); the last verdicts read are shown",
                ),
        })
        .optional()
        .describe(
            "With several replicas (`--store redis://…`): only the leader probes; every replica shows its verdicts. Absent with the memory store",
        ),
});

/** The proxy part of a lease: where to send traffic. */
export const leaseViewSchema = z
    .object({
        id: z.string().describe("Lease id; release it with POST /v1/leases/{id}/release"),
        proxy: z.object({
            id: z.string(),
            pool: z.string(),
            provider: z.string(),
            zone: z.string(),
            host: z.string(),
            port: z.number().int(),
            url: z
                .string()
                .describe(
                    "http://host:port, usable as an HTTP(S) proxy URL; http://user:pass@host:port when the proxy requires credentials (`auth`)",
                ),
            auth: z.boolean().optional().describe("True when the proxy requires credentials; `url` carries them"),
        }),
        target: z.string().optional(),
        session: z
            .string()
            .optional()
            .describe("The sticky session this lease was taken for, when the request named one"),
        rebound: z
            .boolean()
            .optional()
            .describe(
                "With a session: true when the session moved to this proxy because its previous one was unhealthy, draining, leased by someone else, blocked for the target or gone; false when it kept its proxy or is new",
            ),
        leasedAt: isoTime,
        expiresAt: isoTime,
    })
    .meta({ id: "Lease" });

/** POST /v1/leases → 201 */
export const leaseResponse = z.object({ lease: leaseViewSchema });

/** POST /v1/leases/{id}/release → 200 (times in epoch milliseconds, as the lease manager keeps them). */
export const releaseResponse = z.object({
    released: z.literal(true),
    lease: z.object({
        id: z.string(),
        proxyId: z.string(),
        pool: z.string(),
        target: z.string().optional(),
        session: z.string().optional(),
        leasedAt: z.number().describe("epoch ms"),
        expiresAt: z.number().describe("epoch ms"),
    }),
});

/** GET /v1/whoami: the presenting token's name and scopes (never the token), so a client can follow them. */
export const whoamiSchema = z.object({ name: z.string(), scopes: z.array(z.enum(SCOPES)) }).meta({ id: "Whoami" });

/** GET /v1/leases: active leases without their ids (an id is what releases a lease). */
export const activeLeasesSchema = z
    .object({
        leases: z.array(
            z.object({
                proxy: z.string(),
                pool: z.string(),
                target: z.string().optional(),
                leasedAt: isoTime,
                expiresAt: isoTime,
            }),
        ),
    })
    .meta({ id: "ActiveLeases" });

export const echoResponse = z.object({ ip: z.string().describe("The caller's address as the service sees it") });
