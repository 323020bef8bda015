/**
 * The rolling-change service tests' setup (test/service/rolling*.test.ts): a local pool of 4 pinned to a
 * port range (moving it to another range replaces every member's process), the ranges themselves, and
 * a watch of the operation's `rolling` record as a client polling GET /v1/operations/<id> sees it.
 */
import { freePortRange } from "./net";

/** A local pool of 4 on basePort.. (room for a surge: maxReplicas 6). */
export function rollingConfig(basePort: number): object {
    return {
        "egress:providers": { local: { type: "local", basePort } },
        "egress:pools": [{ name: "web", provider: "local", replicas: 4, maxReplicas: 6, drainSeconds: 5 }],
    };
}

/** A free range for the pool's 4 members and its surge member, clear of the ranges starting at `avoid`. */
export async function rollingPortRange(avoid: number[] = []): Promise<number> {
    let base: number;
    do base = await freePortRange(5);
    while (avoid.some((a) => Math.abs(base - a) < 6));
    return base;
}

export const portOf = (url: string) => Number(new URL(url).port);

/** Member id → URL (GET /v1/proxies) is exactly web-0..web-3, each on its port of the range at `base`. */
export function onRange(urls: Map<string, string>, base: number): boolean {
    const ids = [...urls.keys()].sort();
    return (
        JSON.stringify(ids) === JSON.stringify(["web-0", "web-1", "web-2", "web-3"]) &&
        ids.every((id) => portOf(urls.get(id)!) === base + Number(id.slice("web-".length)))
    );
}

/**
 * Polls the operation (`get`) every 200 ms until it settles or `stopWhen` holds for it; returns the last
 * view and every batch seen (`<batch>/<of>:<members>`).
 */
export async function watchRolling(
    get: () => Promise<any>,
    stopWhen: (op: any) => boolean = () => false,
): Promise<{ op: any; batches: Set<string> }> {
    const batches = new Set<string>();
    for (;;) {
        const op = await get();
        if (!op) throw new Error("the operation's view came back empty (GET /v1/operations/:id answered no operation)");
        if (op.rolling) batches.add(`${op.rolling.batch}/${op.rolling.of}:${op.rolling.members.join(",")}`);
        if (["succeeded", "failed", "interrupted"].includes(op.status) || stopWhen(op)) return { op, batches };
        await new Promise((res) => setTimeout(res, 200));
    }
}
