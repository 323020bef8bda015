import { z } from "zod";

/** Settings every provider entry takes, whatever its kind. */
export const providerCommonFields = {
    /**
     * Pulumi's `retainOnDelete` for every resource of this entry (members, pool and entry-wide ones):
     * when the engine deletes or replaces one, it only drops it from state and leaves the thing running,
     * for `egress gc` to list (and remove, once reachable). For a host being retired, set it *before*
     * the host goes away (an `up` records it in state); for a host already unreachable, use
     * `egress forget <member>`. @default false
     */
    retainOnDelete: z.boolean().optional(),
};
