export type { Collector, ManagedThing } from "../../components/kind";
export { collectorFor, knownToState } from "./collectors";
export { collectGarbage } from "./collect";
export type { GcOptions, GcReport, Orphan, ProviderResult } from "./collect";
