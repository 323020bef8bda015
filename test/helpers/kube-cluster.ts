/**
 * A real Kubernetes control plane on 127.0.0.1 for one test file (scripts/k8s-cluster.sh: etcd,
 * kube-apiserver, kube-controller-manager, kube-scheduler, kwok), built on first use by
 * scripts/build-k8s.sh into the machine-wide cache. The real pulumi-resource-kubernetes from that build is
 * put first on PATH, where the engine finds it (plugin acquisition is off in tests). The cluster is owned
 * by this process: if it dies, the cluster's guard stops every part.
 */
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../src/engine";

export interface KubeCluster {
    dir: string;
    /** Contexts `admin` (system:masters, current) and `nobody` (authenticated, no RBAC rights). */
    kubeconfig: string;
    server: string;
    adminToken: string;
    /** Where etcd, kube-apiserver, …, pulumi-resource-kubernetes were built. */
    bin: string;
    /** Milliseconds `k8s-cluster.sh start` took (binaries cached). */
    startMs: number;
    /** A call as the admin (or `token`): status and parsed JSON body. Never throws on an HTTP status. */
    api(method: string, route: string, body?: unknown, token?: string): Promise<{ status: number; body: any }>;
    createNamespace(name: string): Promise<void>;
    /** A kubeconfig like `kubeconfig` whose only user carries `token` (e.g. one the server does not know). */
    kubeconfigWithToken(token: string): string;
    /** pids of this cluster's processes (their argv names its dir). */
    pids(): number[];
    stop(): void;
}

const SCRIPTS = path.join(PACKAGE_ROOT, "scripts");

/** Builds (or finds cached) binaries; a cold build takes ~11 min on 2 cores and prints its progress. */
export function buildKubeBinaries(): string {
    const r = cp.spawnSync("bash", [path.join(SCRIPTS, "build-k8s.sh")], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
        timeout: 60 * 60_000,
    });
    if (r.status !== 0)
        throw new Error(`scripts/build-k8s.sh failed (exit ${r.status ?? r.signal}); see its output above`);
    const bin = r.stdout.trim().split("\n").pop()!;
    if (!fs.existsSync(path.join(bin, "pulumi-resource-kubernetes")))
        throw new Error(`scripts/build-k8s.sh printed ${bin}, which has no pulumi-resource-kubernetes`);
    return bin;
}

/** `owner`: the pid whose death stops the cluster (default this process); `dir`: reuse a cluster dir. */
export function startKubeCluster(opts: { owner?: number; dir?: string } = {}): KubeCluster {
    // EGRESS_K8S_BIN: binaries from elsewhere (a build in progress, a dev's own); else the cached build.
    const bin = process.env.EGRESS_K8S_BIN || buildKubeBinaries();
    const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "egress-k8s-"));
    const started = Date.now();
    const r = cp.spawnSync(
        "bash",
        [path.join(SCRIPTS, "k8s-cluster.sh"), "start", dir, "--owner", String(opts.owner ?? process.pid)],
        {
            encoding: "utf8",
            stdio: ["ignore", "pipe", "inherit"],
            timeout: 180_000,
            env: { ...process.env, EGRESS_K8S_BIN: bin },
        },
    );
    if (r.status !== 0)
        throw new Error(`scripts/k8s-cluster.sh start failed (exit ${r.status ?? r.signal}); see its output above`);
    const startMs = Date.now() - started;
    const env = Object.fromEntries(
        fs
            .readFileSync(path.join(dir, "cluster.env"), "utf8")
            .trim()
            .split("\n")
            .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    const ca = fs.readFileSync(path.join(dir, "pki", "serving.crt"));
    // The engine (and so the kubernetes provider plugin) inherits this PATH.
    if (!(process.env.PATH ?? "").split(path.delimiter).includes(bin))
        process.env.PATH = `${bin}${path.delimiter}${process.env.PATH ?? ""}`;

    const api: KubeCluster["api"] = (method, route, body, token = env.ADMIN_TOKEN) =>
        new Promise((resolve, reject) => {
            const data = body === undefined ? undefined : JSON.stringify(body);
            const req = https.request(
                `${env.SERVER}${route}`,
                {
                    method,
                    ca,
                    timeout: 30_000,
                    headers: {
                        authorization: `Bearer ${token}`,
                        accept: "application/json",
                        ...(data
                            ? {
                                  "content-type":
                                      method === "PATCH" ? "application/merge-patch+json" : "application/json",
                              }
                            : {}),
                    },
                },
                (res) => {
                    let text = "";
                    res.setEncoding("utf8");
                    res.on("data", (c) => (text += c));
                    res.on("end", () => {
                        let parsed: any = text;
                        try {
                            parsed = JSON.parse(text);
                        } catch {
                            /* not JSON: keep the text */
                        }
                        resolve({ status: res.statusCode ?? 0, body: parsed });
                    });
                },
            );
            req.on("timeout", () => req.destroy(new Error(`${method} ${route} timed out`)));
            req.on("error", reject);
            req.end(data);
        });

    return {
        dir,
        kubeconfig: env.KUBECONFIG,
        server: env.SERVER,
        adminToken: env.ADMIN_TOKEN,
        bin,
        startMs,
        api,
        async createNamespace(name) {
            const r = await api("POST", "/api/v1/namespaces", {
                apiVersion: "v1",
                kind: "Namespace",
                metadata: { name },
            });
            if (r.status !== 201)
                throw new Error(`creating namespace ${name}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
        },
        kubeconfigWithToken(token) {
            const file = path.join(dir, `kubeconfig-${token.slice(0, 8)}`);
            const text = fs.readFileSync(env.KUBECONFIG, "utf8").replace(env.ADMIN_TOKEN, token);
            fs.writeFileSync(file, text, { mode: 0o600 });
            return file;
        },
        pids: () =>
            fs
                .readdirSync("/proc")
                .filter((d) => /^\d+$/.test(d))
                .filter((p) => {
                    try {
                        return fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes(dir);
                    } catch {
                        return false;
                    }
                })
                .map(Number),
        stop() {
            const s = cp.spawnSync("bash", [path.join(SCRIPTS, "k8s-cluster.sh"), "stop", dir], {
                encoding: "utf8",
                stdio: ["ignore", "inherit", "inherit"],
                timeout: 60_000,
            });
            if (s.status !== 0) throw new Error(`scripts/k8s-cluster.sh stop failed (exit ${s.status ?? s.signal})`);
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}
