/**
 * Health: probes through each proxy (`probeThroughProxy`), a per-member state machine (`MemberHealth`)
 * and the scheduler that runs them over the stack's members (`HealthMonitor`).
 */
export { probeThroughProxy } from "./probe";
export type { ProbeFn, ProbeOptions, ProbeResult } from "./probe";
export { DEFAULT_THRESHOLDS, MemberHealth } from "./state";
export type { HealthState, HealthThresholds, MemberHealthView, Transition } from "./state";
export { HealthMonitor } from "./monitor";
export type { HealthMonitorOptions } from "./monitor";
export { startLoopbackEcho } from "./echo";
