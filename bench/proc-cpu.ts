/**
 * CPU time a process has used so far (user + system, /proc/<pid>/stat), for benches that divide it by
 * the work done: unlike throughput, CPU per request hardly moves when other jobs load the machine.
 * Linux only; the resolution is one clock tick (10 ms at the usual 100 Hz), so measure seconds, not ms.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";

let ticksPerSecond: number | undefined;

/** µs of CPU `pid` has used (utime + stime, fields 14 and 15 of /proc/<pid>/stat). */
export function processCpuMicros(pid: number): number {
    ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing one.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1e6;
}

/**
 * Context switches of `pid`'s main thread so far (voluntary + involuntary, /proc/<pid>/status): for an
 * event-loop process, about one per sleep and wake-up. Where a switch is dear (a virtual machine's
 * interrupts, docs/bench.md), the switches per request explain CPU per request that the code alone does not.
 */
export function processSwitches(pid: number): number {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const count = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
    return count("voluntary_ctxt_switches") + count("nonvoluntary_ctxt_switches");
}
