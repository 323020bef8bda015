export type { Collector, ManagedThing } from "../../components/kind";
export { knownToState } from "./known-to-state";
export { collectGarbage } from "./collect";
export type { GcOptions, GcReport, Orphan, ProviderResult } from "./collect";
