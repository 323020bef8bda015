/**
 * What a restart after a SIGKILL of `egress serve` must leave once it converged (test/service/*-restart
 * tests): the proxy processes are exactly the members the service lists and the stack outputs, `egress gc`
 * finds no orphan, no backend lock is left (lock files, or `locks` of another backend: backends.ts), and
 * no engine or plugin process of the killed service runs.
 */
import assert from "node:assert/strict";
import {
    backendLockFiles,
    cli,
    engineProcessesOf,
    type ProcProject,
    proxyProcesses,
    type ServeProcess,
} from "./processes";

/** Asserts nothing leaked (`label` prefixes the messages); returns the member ids the service lists, sorted. */
export async function assertNothingLeaked(
    p: ProcProject,
    svc: ServeProcess,
    deadPid: number,
    label = "",
    locks: (p: ProcProject) => string[] = backendLockFiles,
): Promise<string[]> {
    const state = ((await svc.call("GET", "/v1/proxies")).body.proxies as any[]).map((x) => x.id).sort();
    assert.deepEqual(
        [...proxyProcesses(p).keys()].sort(),
        state.map((id) => `${p.stack}-${id}`),
        `${label}processes = state`,
    );
    const outputs = JSON.parse(cli(p, ["outputs", "--json"]).stdout).proxies as { id: string }[];
    assert.deepEqual(outputs.map((o) => o.id).sort(), state, `${label}stack outputs agree`);
    assert.deepEqual(engineProcessesOf(deadPid), [], `${label}no engine process of the dead service`);
    assert.deepEqual(locks(p), [], `${label}no backend lock left`);
    const gc = cli(p, ["gc", "--json"]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.deepEqual(JSON.parse(gc.stdout).orphans, [], `${label}gc finds nothing`);
    return state;
}
