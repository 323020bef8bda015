/**
 * The rotating gateway (`egress serve --gateway-port`, docs/crawling.md): one proxy address whose every
 * request goes through the next member the lease manager picks.
 */
export { Gateway } from "./server";
export type { GatewayAddresses, GatewayOptions } from "./options";
export { createGatewayMetrics, type GatewayMetrics } from "../observe/gateway-metrics";
export { type BlockRules, DEFAULT_BLOCK_RULES } from "./outcome";
export { parseUsername, GRAMMAR as USERNAME_GRAMMAR } from "./username";
