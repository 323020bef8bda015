/**
 * The few things egress asks Pulumi's PostgreSQL DIY backend directly, with SQL, because the CLI has no
 * command for them: when the stack's checkpoint row last changed (the stack watch's poll), and pruning
 * the history and backup rows every update adds. The table is Pulumi's key/value store (`key`, `data`,
 * `updated_at`; pkg/backend/diy/postgres/schema.sql); keys are the file backend's paths under the URL's
 * database name (`<db>/.pulumi/stacks/egress/<stack>.json`).
 */
import { Client } from "pg";
import { PROJECT } from "./checkpoint";

interface Target {
    connectionString: string;
    table: string;
    /** Key prefix: the URL's path (`<db>/`), as the backend's PrefixedBucket adds it. */
    prefix: string;
}

/** Where the backend keeps its rows: the URL without Pulumi's own `table` parameter, the table, the key prefix. */
export function postgresTarget(backendUrl: string): Target {
    const u = new URL(backendUrl);
    const table = u.searchParams.get("table") || "pulumi_state";
    // Pulumi puts the name into its SQL unquoted; the same rule here keeps a hostile name out of ours.
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/.test(table))
        throw new Error(`the backend URL's table parameter ${JSON.stringify(table)} is not a plain SQL name`);
    u.searchParams.delete("table");
    const sub = u.pathname.replace(/^\/+/, "");
    return { connectionString: u.toString(), table, prefix: sub ? (sub.endsWith("/") ? sub : `${sub}/`) : "" };
}

async function withClient<T>(backendUrl: string, fn: (c: Client, t: Target) => Promise<T>): Promise<T> {
    const t = postgresTarget(backendUrl);
    const client = new Client({ connectionString: t.connectionString, connectionTimeoutMillis: 5_000 });
    // A connection error after connect (the server going away) must not become an unhandled 'error' event.
    client.on("error", () => undefined);
    try {
        await client.connect();
        return await fn(client, t);
    } catch (e) {
        // Said to be about the backend, so engine-errors.ts can tell a server that did not answer
        // (`connect ECONNREFUSED`) from a provider's unreachable host.
        throw new Error(`PostgreSQL: ${(e as Error).message}`, { cause: e });
    } finally {
        await client.end().catch(() => undefined);
    }
}

/** Keys of the stack's checkpoint, in each compression Pulumi may have written it with. */
function checkpointKeys(t: Target, stack: string): string[] {
    const base = `${t.prefix}.pulumi/stacks/${PROJECT}/${stack}.json`;
    return [base, `${base}.gz`, `${base}.zst`];
}

/** The newest `updated_at` of the stack's checkpoint row (ISO time), undefined when it has none. */
export async function checkpointVersion(backendUrl: string, stack: string): Promise<string | undefined> {
    return withClient(backendUrl, async (c, t) => {
        const r = await c.query<{ v: Date | null }>(`SELECT max(updated_at) AS v FROM ${t.table} WHERE key = ANY($1)`, [
            checkpointKeys(t, stack),
        ]);
        return r.rows[0]?.v ? r.rows[0].v.toISOString() : undefined;
    });
}

/**
 * Deletes the stack's history and backup rows but the newest `keep` updates' (a history entry is two
 * rows: `<stack>-<ns>.history.json` and `.checkpoint.json`; a backup one). Names carry a nanosecond
 * timestamp of fixed width, so key order is age order. Returns the rows deleted.
 */
export async function prunePostgresHistory(backendUrl: string, stack: string, keep: number): Promise<number> {
    return withClient(backendUrl, async (c, t) => {
        let deleted = 0;
        for (const [dir, perUpdate] of [
            [`${t.prefix}.pulumi/history/${PROJECT}/${stack}/`, 2],
            [`${t.prefix}.pulumi/backups/${PROJECT}/${stack}/`, 1],
        ] as const) {
            const like = dir.replace(/[\\%_]/g, (ch) => `\\${ch}`) + "%";
            const r = await c.query(
                `DELETE FROM ${t.table} WHERE key LIKE $1 AND key NOT IN (SELECT key FROM ${t.table} WHERE key LIKE $1 ORDER BY key DESC LIMIT $2)`,
                [like, keep * perUpdate],
            );
            deleted += r.rowCount ?? 0;
        }
        return deleted;
    });
}

/**
 * One lock row of the stack (`<db>/.pulumi/locks/organization/egress/<stack>/<id>.json`: the DIY backend's
 * lock path is the stack's fully qualified name) and who its holder says it is.
 */
export interface PostgresLockRow {
    key: string;
    pid?: number;
    hostname?: string;
}

/**
 * Connects (5 s at most), and lists the stack's Pulumi lock rows with the holder each names (the lock's JSON:
 * `{pid, username, hostname, timestamp}`). Throws what the connection or query threw: the caller says the
 * backend is unreachable.
 */
export async function postgresLockRows(backendUrl: string, stack: string): Promise<PostgresLockRow[]> {
    return withClient(backendUrl, async (c, t) => {
        const esc = (s: string) => s.replace(/[\\%_]/g, (ch) => `\\${ch}`);
        // Any organization segment (`organization` for a DIY backend); the project and stack are exact.
        const like = `${esc(`${t.prefix}.pulumi/locks/`)}%/${esc(`${PROJECT}/${stack}/`)}%`;
        // The table appears on the backend's first use: before that there is nothing to lock.
        const exists = await c.query<{ t: string | null }>(`SELECT to_regclass($1) AS t`, [t.table]);
        if (!exists.rows[0]?.t) return [];
        const r = await c.query<{ key: string; data: unknown }>(
            `SELECT key, data FROM ${t.table} WHERE key LIKE $1 ORDER BY key`,
            [like],
        );
        return r.rows.map((row) => {
            try {
                const l = lockContent(row.data) as { pid?: unknown; hostname?: unknown };
                return {
                    key: row.key,
                    pid: Number(l.pid) || undefined,
                    hostname: String(l.hostname ?? "") || undefined,
                };
            } catch {
                return { key: row.key };
            }
        });
    });
}

/**
 * The lock's own JSON from a row's `data`. Pulumi's schema has `data` json holding the blob base64-encoded
 * (`{"data": "<base64>"}`, a Go []byte), which pg parses; text or bytea (another table) is parsed first.
 */
function lockContent(d: unknown): unknown {
    if (Buffer.isBuffer(d)) return lockContent(d.toString("utf8"));
    if (typeof d === "string") return lockContent(JSON.parse(d));
    const wrapped = (d as { data?: unknown } | null)?.data;
    if (typeof wrapped === "string") return JSON.parse(Buffer.from(wrapped, "base64").toString("utf8"));
    return d;
}
