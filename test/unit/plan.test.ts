import { test } from "node:test";
import assert from "node:assert/strict";
import { memberName, planMembers, poolSchema } from "../../src/model";

const pool = (o: object) => poolSchema.parse({ name: "home", provider: "kvm-home", replicas: 5, ...o });

test("members are named <pool>-<index> with dense indices", () => {
    assert.deepEqual(
        planMembers(pool({ replicas: 3 })).map((m) => m.name),
        ["home-0", "home-1", "home-2"],
    );
    assert.equal(memberName("home", 7), "home-7");
});

test("scaling down drops the highest indices and keeps survivors identical", () => {
    const five = planMembers(pool({ replicas: 5 }));
    const two = planMembers(pool({ replicas: 2 }));
    assert.deepEqual(two, five.slice(0, 2));
});

test("per-member overrides replace the pool's values; placement merges", () => {
    const plans = planMembers(
        pool({
            port: 3128,
            placement: { zone: "home-a", image: "debian-13" },
            cloudInit: { file: "cloud-init/squid.yaml" },
            members: [
                { index: 4, port: 8080, cloudInit: { inline: "#cloud-config\n" }, placement: { zone: "home-b" } },
            ],
        }),
    );
    assert.deepEqual(plans[0], {
        name: "home-0",
        index: 0,
        port: 3128,
        placement: { zone: "home-a", image: "debian-13" },
        cloudInit: { file: "cloud-init/squid.yaml" },
    });
    assert.deepEqual(plans[4], {
        name: "home-4",
        index: 4,
        port: 8080,
        placement: { zone: "home-b", image: "debian-13" },
        cloudInit: { inline: "#cloud-config\n" },
    });
});

test("an override above the replica count plans nothing", () => {
    assert.equal(planMembers(pool({ replicas: 2, members: [{ index: 4, port: 8080 }] })).length, 2);
});

test("zero replicas plans no members", () => {
    assert.deepEqual(planMembers(pool({ replicas: 0 })), []);
});
