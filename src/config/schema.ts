/**
 * The whole `egress:*` config. The provider union is the one part that needs the kinds registry, so it
 * lives here, above components/; the pool shapes every kind reads are src/model/pool.ts.
 */
import { z } from "zod";
import { dnsLabel, poolSchema } from "../model";
import { KIND_SCHEMAS } from "../../components/registry";

/** One schema per registered kind (components/registry.ts), told apart by `type`. */
export const providerSchema = z.discriminatedUnion("type", KIND_SCHEMAS);

export const egressConfigSchema = z.strictObject({
    providers: z.record(dnsLabel(), providerSchema),
    pools: z.array(poolSchema).default([]),
});

export type ProviderConfig = z.infer<typeof providerSchema>;
export type ProviderKind = ProviderConfig["type"];
export type EgressConfig = z.infer<typeof egressConfigSchema>;
