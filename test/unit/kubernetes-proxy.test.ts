import { before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as path from "node:path";
import { installMocks, isSecret, ofType, recorded, settle, valueOf } from "../helpers/pulumi-mocks";
import { parseEgressConfig } from "../../src/config";
import type { StackContext } from "../../src/model";
import { TEST_INSTALLATION } from "../helpers/installation";
import { deploymentOf, MEMBER_TEMPLATE_KEY, serviceOf, specOf } from "../../components/kubernetes/member-manifest";

const root = path.resolve(__dirname, "..", "..", "..");
const context: StackContext = {
    project: "egress",
    stack: "test",
    projectRoot: root,
    stateDir: "/tmp/egress-test",
    installation: TEST_INSTALLATION,
};
const SQUID_3128 =
    "http_port 3128\nacl crawlers src 203.0.113.0/24\nhttp_access allow crawlers\nhttp_access deny all\n";
const SQUID_8080 = SQUID_3128.replace("3128", "8080");

let pool: typeof import("../../components/pool");
let k8sMod: typeof import("../../components/kubernetes/component");

before(async () => {
    await installMocks("egress", "test");
    pool = await import("../../components/pool");
    k8sMod = await import("../../components/kubernetes/component");
});

async function build(poolOver: Record<string, unknown>, entryOver: Record<string, unknown> = {}) {
    const cfg = parseEgressConfig(
        {
            providers: { k8s: { type: "kubernetes", context: "prod", namespace: "proxies", ...entryOver } },
            pools: [{ provider: "k8s", ...poolOver }],
        },
        root,
    );
    const p = new pool.ProxyPool(cfg.pools[0].name, {
        pool: cfg.pools[0],
        providerName: "k8s",
        entry: cfg.providers.k8s,
        context,
    });
    const members = await valueOf(p.members);
    await settle();
    return members;
}

const one = (type: string, name: string) => {
    const r = recorded.find((x) => x.type === type && x.name === name);
    assert.ok(r, `no ${type} named ${name}`);
    return r;
};
const MEMBER = "pulumi-nodejs:dynamic/egress:kubernetes:Member";
/** Member `n`'s spec, as the member provider reads it: its pool's template (its members ConfigMap) and its own part. */
const specOfMember = (n: string) => {
    const ref = one(MEMBER, n).inputs.member;
    const pool = n.slice(0, n.lastIndexOf("-"));
    return specOf(
        JSON.parse(one("kubernetes:core/v1:ConfigMap", `${pool}-members`).inputs.data[MEMBER_TEMPLATE_KEY]),
        ref,
    );
};
/** The objects the member provider applies for member `n` (member-manifest.ts). */
const deployment = (n: string): any => deploymentOf(specOfMember(n), `${n}-a1b2c3`);
const service = (n: string): any => serviceOf(specOfMember(n), `${n}-a1b2c3`);
const SECRET = "kubernetes:core/v1:Secret";

describe("PodProxy under mocks", () => {
    it("creates a one-replica Deployment and a Service per member, lowest indices first", async () => {
        const members = await build({
            name: "crawl",
            replicas: 3,
            cloudInit: { file: "test/fixtures/squid-3128.yaml" },
            members: [
                { index: 1, port: 8080, cloudInit: { file: "test/fixtures/squid-8080.yaml" } },
                { index: 5, port: 8080, cloudInit: { file: "test/fixtures/squid-8080.yaml" } },
            ],
        });
        assert.deepEqual(
            ofType(MEMBER, "crawl-")
                .map((r) => r.name)
                .sort(),
            ["crawl-0", "crawl-1", "crawl-2"],
        );
        assert.deepEqual(ofType("kubernetes:apps/v1:Deployment"), [], "no Deployment resource: the member applies it");
        const d1 = deployment("crawl-1");
        const labels = {
            "egress-project": "egress",
            "egress-stack": "test",
            "egress-installation": TEST_INSTALLATION.id,
            "egress-pool": "crawl",
            "egress-member": "crawl-1",
        };
        assert.equal(d1.metadata.namespace, "proxies");
        assert.deepEqual(d1.metadata.labels, labels);
        assert.equal(d1.spec.replicas, 1);
        assert.deepEqual(d1.spec.selector.matchLabels, labels);
        assert.deepEqual(d1.spec.template.metadata.labels, labels);
        const c = d1.spec.template.spec.containers[0];
        assert.equal(c.image, "ubuntu/squid:latest");
        assert.deepEqual(c.ports, [{ name: "proxy", containerPort: 8080, protocol: "TCP" }]);
        assert.deepEqual(c.readinessProbe.tcpSocket, { port: 8080 });
        assert.deepEqual(c.resources, {
            requests: { cpu: "50m", memory: "64Mi" },
            limits: { cpu: "500m", memory: "256Mi" },
        });
        assert.deepEqual(c.volumeMounts, [
            { name: "config", mountPath: "/etc/squid/squid.conf", subPath: "squid.conf", readOnly: true },
        ]);
        assert.deepEqual(
            members.map((m) => [m.id, m.port]),
            [
                ["crawl-0", 3128],
                ["crawl-1", 8080],
                ["crawl-2", 3128],
            ],
        );
        assert.equal(members[1].host, "crawl-1-a1b2c3.proxies.svc.cluster.local");
        assert.equal(members[1].zone, "prod");
    });

    it("spreads a pool's members across nodes, softly", () => {
        const spec = deployment("crawl-0").spec.template.spec;
        const poolSel = {
            matchLabels: {
                "egress-project": "egress",
                "egress-stack": "test",
                "egress-installation": TEST_INSTALLATION.id,
                "egress-pool": "crawl",
            },
        };
        assert.deepEqual(spec.topologySpreadConstraints, [
            {
                maxSkew: 1,
                topologyKey: "kubernetes.io/hostname",
                whenUnsatisfiable: "ScheduleAnyway",
                labelSelector: poolSel,
            },
        ]);
        const pref = spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0];
        assert.equal(pref.podAffinityTerm.topologyKey, "kubernetes.io/hostname");
        assert.deepEqual(pref.podAffinityTerm.labelSelector, poolSel);
        assert.equal(spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution, undefined);
    });

    it("puts the squid.conf from cloud-init in one Secret per pool, with a key only for members that differ", () => {
        assert.deepEqual(
            ofType(SECRET, "crawl").map((r) => r.name),
            ["crawl-config"],
        );
        const s = one(SECRET, "crawl-config");
        assert.deepEqual(s.inputs.stringData, { "squid.conf": SQUID_3128, "member-1.squid.conf": SQUID_8080 });
        // What the pool's members share is kept once, in a ConfigMap; each member resource keeps its own part.
        const template = JSON.parse(
            one("kubernetes:core/v1:ConfigMap", "crawl-members").inputs.data[MEMBER_TEMPLATE_KEY],
        );
        assert.equal(template.image, "ubuntu/squid:latest");
        assert.equal(template.secret, "crawl-config-a1b2c3");
        assert.deepEqual(one(MEMBER, "crawl-0").inputs.member, {
            name: "crawl-0",
            tpl: "proxies/crawl-members-a1b2c3",
            cluster: { context: "prod" },
        });
        assert.deepEqual(
            Object.keys(one(MEMBER, "crawl-1").inputs.member).sort(),
            ["cluster", "hash", "key", "name", "port", "tpl"],
            "a member with its own port and config keeps those",
        );
        assert.ok(isSecret(s.raw.stringData), "Secret data must reach state encrypted");
        assert.equal(s.inputs.metadata.labels["egress-member"], undefined);
        const vol = (n: string) => deployment(n).spec.template.spec.volumes[0].secret;
        assert.deepEqual(vol("crawl-0"), {
            secretName: "crawl-config-a1b2c3",
            items: [{ key: "squid.conf", path: "squid.conf" }],
        });
        assert.deepEqual(vol("crawl-1").items, [{ key: "member-1.squid.conf", path: "squid.conf" }]);
        const hash = (n: string) => deployment(n).spec.template.metadata.annotations[k8sMod.CONFIG_HASH_ANNOTATION];
        assert.equal(hash("crawl-0"), hash("crawl-2"));
        assert.notEqual(hash("crawl-0"), hash("crawl-1"));
    });

    it("gives each Service the member's selector and port, ClusterIP by default, through the entry's provider", () => {
        const svc = service("crawl-1");
        assert.equal(svc.spec.type, "ClusterIP");
        assert.deepEqual(svc.spec.selector, deployment("crawl-1").spec.selector.matchLabels);
        assert.deepEqual(svc.spec.ports, [{ name: "proxy", port: 8080, targetPort: 8080, protocol: "TCP" }]);
        assert.equal(svc.spec.externalTrafficPolicy, undefined);
        const prov = one("pulumi:providers:kubernetes", "crawl-k8s").inputs;
        assert.equal(prov.context, "prod");
        assert.equal(prov.namespace, "proxies");
        assert.match(
            one(SECRET, "crawl-config").provider ?? "",
            /pulumi:providers:kubernetes::crawl-k8s::crawl-k8s-id$/,
        );
        // The member reaches the same cluster itself: the entry's context (and kubeconfig, unset here).
        assert.deepEqual(one(MEMBER, "crawl-0").inputs.member.cluster, { context: "prod" });
        assert.equal(service("crawl-0").metadata.namespace, "proxies");
    });

    it("LoadBalancer members publish the ingress IP and admit only allowedSourceRanges, keeping client IPs", async () => {
        const members = await build(
            { name: "edge", replicas: 1 },
            { serviceType: "LoadBalancer", allowedSourceRanges: ["203.0.113.0/24"] },
        );
        const svc = service("edge-0").spec;
        assert.equal(svc.type, "LoadBalancer");
        assert.deepEqual(svc.loadBalancerSourceRanges, ["203.0.113.0/24"]);
        assert.equal(svc.externalTrafficPolicy, "Local");
        assert.match(members[0].host, /^192\.0\.2\.\d+$/);
        // No cloud-init: generated squid.conf on the pool port, admitting in-cluster and the allowed ranges.
        const conf = one(SECRET, "edge-config").inputs.stringData["squid.conf"];
        assert.equal(conf, k8sMod.defaultSquidConf(3128, ["203.0.113.0/24"]));
        assert.match(conf, /^acl egress_clients src .*203\.0\.113\.0\/24$/m);
    });

    it("scales down by dropping the highest members; a port override gets its own generated config", async () => {
        await build({
            name: "few",
            replicas: 2,
            members: [
                { index: 1, port: 8081 },
                { index: 2, port: 9000 },
            ],
        });
        assert.deepEqual(
            ofType(MEMBER, "few-")
                .map((r) => r.name)
                .sort(),
            ["few-0", "few-1"],
        );
        const data = one(SECRET, "few-config").inputs.stringData;
        assert.deepEqual(Object.keys(data).sort(), ["member-1.squid.conf", "squid.conf"]);
        assert.match(data["member-1.squid.conf"], /^http_port 8081$/m);
        assert.match(data["squid.conf"], /^http_port 3128$/m);
    });

    it("a pool with auth: the Secret holds the passwd file (hashes only), squid.conf requires the credentials, the pod mounts both, and new credentials roll the pod", async () => {
        const password = "k8s-canary-password-1";
        await build({ name: "authed", replicas: 1, auth: { username: "crawler", password } });
        const data = one(SECRET, "authed-config").inputs.stringData;
        assert.deepEqual(Object.keys(data).sort(), ["egress.passwd", "squid.conf"]);
        assert.match(data["egress.passwd"], /^crawler:\$apr1\$/);
        assert.match(
            data["squid.conf"],
            /^auth_param basic program \/usr\/lib\/squid\/basic_ncsa_auth \/etc\/squid\/egress.passwd$/m,
        );
        assert.match(data["squid.conf"], /^http_access allow egress_users$/m);
        assert.ok(
            !JSON.stringify(recorded.filter((r) => r.name.startsWith("authed"))).includes(password),
            "the clear password is in no input",
        );
        const spec = deployment("authed-0").spec.template.spec;
        assert.deepEqual(
            spec.containers[0].volumeMounts.map((m: any) => [m.mountPath, m.subPath]),
            [
                ["/etc/squid/squid.conf", "squid.conf"],
                ["/etc/squid/egress.passwd", "egress.passwd"],
            ],
        );
        assert.deepEqual(spec.volumes[0].secret.items, [
            { key: "squid.conf", path: "squid.conf" },
            { key: "egress.passwd", path: "egress.passwd" },
        ]);
        // Same plans and squid.conf, another passwd file: another hash (a subPath mount never sees a Secret change, so the pod must roll).
        const plans = [{ name: "authed-0", index: 0, port: 3128, placement: {} }];
        const hashOf = (passwd: string) =>
            k8sMod.secretLayout(plans, data["squid.conf"], () => data["squid.conf"], passwd).mounts.get(0)!.hash;
        assert.equal(
            hashOf(data["egress.passwd"]),
            deployment("authed-0").spec.template.metadata.annotations["egress.dev/config-sha256"],
        );
        assert.notEqual(hashOf("crawler:$apr1$other$hash\n"), hashOf(data["egress.passwd"]));
    });
});

describe("squid config from cloud-init", () => {
    it("reads plain and base64 write_files entries, and nothing else", () => {
        const b64 = Buffer.from("http_port 9999\n").toString("base64");
        assert.equal(
            k8sMod.squidConfFromCloudInit(
                `#cloud-config\nwrite_files:\n  - path: /etc/squid/squid.conf\n    encoding: b64\n    content: ${b64}\n`,
            ),
            "http_port 9999\n",
        );
        assert.equal(
            k8sMod.squidConfFromCloudInit("#cloud-config\nwrite_files:\n  - path: /etc/motd\n    content: hi\n"),
            undefined,
        );
        assert.throws(
            () => k8sMod.squidConfFromCloudInit("#cloud-config\nwrite_files: [\n"),
            /cloud-init is not valid YAML/,
        );
    });
});
