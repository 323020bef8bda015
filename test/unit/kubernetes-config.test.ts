import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { parseEgressConfig, problems } from "./config-fixtures";

const parse = (entry: Record<string, unknown>, pools: unknown[] = []) =>
    parseEgressConfig({ providers: { k8s: { type: "kubernetes", ...entry } }, pools }, "/");

describe("kubernetes provider config", () => {
    it("applies defaults", () => {
        const e = parse({}).providers.k8s;
        assert.ok(e.type === "kubernetes");
        assert.deepEqual(
            [e.namespace, e.image, e.serviceType, e.clusterDomain, e.context],
            ["egress", "ubuntu/squid:latest", "ClusterIP", "cluster.local", undefined],
        );
        assert.deepEqual(e.resources, { cpu: "50m", memory: "64Mi", cpuLimit: "500m", memoryLimit: "256Mi" });
    });

    it("requires source ranges for a LoadBalancer and refuses an open one", () => {
        assert.deepEqual(
            problems(() => parse({ serviceType: "LoadBalancer" })),
            [
                "egress:providers.k8s.allowedSourceRanges: is required with `serviceType: LoadBalancer` (a public proxy without source ranges is an open proxy)",
            ],
        );
        assert.deepEqual(
            problems(() => parse({ serviceType: "LoadBalancer", allowedSourceRanges: ["::/0"] })),
            ["egress:providers.k8s.allowedSourceRanges: must not contain 0.0.0.0/0 or ::/0 (that makes an open proxy)"],
        );
    });

    it("names bad namespaces, quantities and unknown keys", () => {
        assert.deepEqual(
            problems(() => parse({ namespace: "Egress_NS" })),
            [
                "egress:providers.k8s.namespace: must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
            ],
        );
        assert.deepEqual(
            problems(() => parse({ resources: { cpu: "lots" } })),
            ["egress:providers.k8s.resources.cpu: must be a Kubernetes quantity such as 100m or 64Mi"],
        );
        assert.deepEqual(
            problems(() => parse({ kubeContext: "prod" })),
            ["egress:providers.k8s: unknown key(s) `kubeContext`"],
        );
    });

    it("refuses placement.image and placement.machineType, naming the provider field to set instead", () => {
        assert.deepEqual(
            problems(() =>
                parse({}, [
                    {
                        name: "pods",
                        provider: "k8s",
                        replicas: 1,
                        placement: { image: "debian-13", machineType: "big" },
                    },
                ]),
            ),
            [
                "egress:pools[0].placement.image: is not used by kubernetes providers (set `image` on the provider entry)",
                "egress:pools[0].placement.machineType: is not used by kubernetes providers (set `resources` on the provider entry)",
            ],
        );
        assert.deepEqual(
            problems(() =>
                parse({}, [
                    {
                        name: "pods",
                        provider: "k8s",
                        replicas: 2,
                        members: [{ index: 1, placement: { machineType: "big" } }],
                    },
                ]),
            ),
            [
                "egress:pools[0].members[0].placement.machineType: is not used by kubernetes providers (set `resources` on the provider entry)",
            ],
        );
    });
});
