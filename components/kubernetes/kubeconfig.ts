/**
 * Reads a kubeconfig the way kubectl does (for the health checker and `egress gc`; the Pulumi provider reads
 * its own): $KUBECONFIG (colon-separated, first file wins per name) or ~/.kube/config, one context, its
 * cluster and user. Supports tokens, token files, client certificates, basic auth and exec plugins.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { configPath } from "../../src/model";
import { type CatalogueEntry, EXIT } from "../../src/model/error-catalogue";

/** Provider-entry fields a kubeconfig problem can be blamed on. */
export type KubeconfigField = "kubeconfigPath" | "context";

/** A kubeconfig problem; `field` names the provider-entry field to fix when there is one. */
export class KubeconfigError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.failed, type: "KubeconfigError" };
    }
    constructor(
        message: string,
        readonly field?: KubeconfigField,
    ) {
        super(message);
        this.name = "KubeconfigError";
    }
}

/** Where a KubeconfigError's field lives in the config: `egress:providers.<provider>.<field>`. */
export function kubeconfigFieldPath(providerName: string, field: KubeconfigField): string {
    return configPath(["providers", providerName, field]);
}

/** What a request to the cluster needs. Secret material stays in here and is never logged. */
export interface ClusterAccess {
    context: string;
    server: string;
    ca?: Buffer;
    insecureSkipTlsVerify?: boolean;
    tlsServerName?: string;
    /** Resolves the credentials at request time (exec plugins run then). */
    credentials(): Promise<{ token?: string; cert?: Buffer; key?: Buffer; basic?: string }>;
}

export interface KubeconfigOptions {
    /** Path from the entry's `kubeconfigPath`. Unset: $KUBECONFIG or ~/.kube/config. */
    kubeconfigPath?: string;
    /** Context from the entry's `context`. Unset: current-context. */
    context?: string;
    env?: Record<string, string | undefined>;
    homeDir?: string;
}

type Named<T> = { name: string; file: string } & T;

function files(opts: KubeconfigOptions): string[] {
    if (opts.kubeconfigPath) return [opts.kubeconfigPath];
    const env = opts.env ?? process.env;
    if (env.KUBECONFIG) return env.KUBECONFIG.split(path.delimiter).filter(Boolean);
    return [path.join(opts.homeDir ?? os.homedir(), ".kube", "config")];
}

/** Loads and resolves one context. Throws KubeconfigError naming the file, context and field. */
export function loadClusterAccess(opts: KubeconfigOptions = {}): ClusterAccess {
    const clusters = new Map<string, Named<{ cluster: any }>>();
    const users = new Map<string, Named<{ user: any }>>();
    const contexts = new Map<string, Named<{ context: any }>>();
    let current: string | undefined;
    const paths = files(opts);
    for (const file of paths) {
        if (!fs.existsSync(file)) {
            if (opts.kubeconfigPath) throw new KubeconfigError(`kubeconfig ${file} does not exist`, "kubeconfigPath");
            continue;
        }
        let doc: any;
        try {
            doc = YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
        } catch (e) {
            throw new KubeconfigError(
                `kubeconfig ${file} is not valid YAML: ${(e as Error).message}`,
                opts.kubeconfigPath ? "kubeconfigPath" : undefined,
            );
        }
        for (const c of doc.clusters ?? []) if (c?.name && !clusters.has(c.name)) clusters.set(c.name, { ...c, file });
        for (const u of doc.users ?? []) if (u?.name && !users.has(u.name)) users.set(u.name, { ...u, file });
        for (const c of doc.contexts ?? []) if (c?.name && !contexts.has(c.name)) contexts.set(c.name, { ...c, file });
        current ??= doc["current-context"] || undefined;
    }
    const name = opts.context ?? current;
    if (!name) throw new KubeconfigError(`no context given and no current-context in ${paths.join(", ")}`, "context");
    const ctx = contexts.get(name);
    if (!ctx)
        throw new KubeconfigError(
            `context \`${name}\` is not in ${paths.join(", ")} (known: ${[...contexts.keys()].join(", ") || "none"})`,
            opts.context ? "context" : undefined,
        );
    const cluster = clusters.get(ctx.context?.cluster);
    if (!cluster?.cluster?.server)
        throw new KubeconfigError(
            `context \`${name}\` names cluster \`${ctx.context?.cluster}\`, which has no server in the kubeconfig`,
        );
    const user = users.get(ctx.context?.user)?.user ?? {};
    const c = cluster.cluster;
    const rel = (p: string, f: string) => path.resolve(path.dirname(f), p);
    const readData = (data: string | undefined, file: string | undefined, base: string) =>
        data ? Buffer.from(data, "base64") : file ? fs.readFileSync(rel(file, base)) : undefined;
    const userFile = users.get(ctx.context?.user)?.file ?? cluster.file;
    return {
        context: name,
        server: String(c.server).replace(/\/$/, ""),
        ca: readData(c["certificate-authority-data"], c["certificate-authority"], cluster.file),
        insecureSkipTlsVerify: c["insecure-skip-tls-verify"] === true,
        tlsServerName: c["tls-server-name"],
        async credentials() {
            if (user.exec) return execCredentials(user.exec, userFile, opts.env ?? process.env);
            if (user["auth-provider"])
                throw new KubeconfigError(
                    `user of context \`${name}\` uses the removed auth-provider \`${user["auth-provider"].name}\`; switch to an exec plugin (e.g. gke-gcloud-auth-plugin)`,
                );
            return {
                token:
                    user.token ??
                    (user.tokenFile ? fs.readFileSync(rel(user.tokenFile, userFile), "utf8").trim() : undefined),
                cert: readData(user["client-certificate-data"], user["client-certificate"], userFile),
                key: readData(user["client-key-data"], user["client-key"], userFile),
                basic: user.username
                    ? Buffer.from(`${user.username}:${user.password ?? ""}`).toString("base64")
                    : undefined,
            };
        },
    };
}

/** Runs a client-go exec plugin (argv, no shell) and reads its ExecCredential. */
function execCredentials(
    exec: any,
    file: string,
    env: Record<string, string | undefined>,
): Promise<{ token?: string; cert?: Buffer; key?: Buffer }> {
    const command: string =
        exec.command.includes("/") && !path.isAbsolute(exec.command)
            ? path.resolve(path.dirname(file), exec.command)
            : exec.command;
    const extra = Object.fromEntries((exec.env ?? []).map((e: any) => [e.name, e.value]));
    return new Promise((resolve, reject) => {
        execFile(command, exec.args ?? [], { env: { ...env, ...extra }, timeout: 30000 }, (err, stdout, stderr) => {
            if (err)
                return reject(
                    new KubeconfigError(
                        `exec credential plugin \`${exec.command}\` failed: ${String(stderr || err.message)
                            .trim()
                            .slice(0, 300)}`,
                    ),
                );
            try {
                const st = JSON.parse(stdout).status ?? {};
                resolve({
                    token: st.token,
                    cert: st.clientCertificateData ? Buffer.from(st.clientCertificateData) : undefined,
                    key: st.clientKeyData ? Buffer.from(st.clientKeyData) : undefined,
                });
            } catch (e) {
                reject(
                    new KubeconfigError(
                        `exec credential plugin \`${exec.command}\` printed no ExecCredential JSON: ${(e as Error).message}`,
                    ),
                );
            }
        });
    });
}
