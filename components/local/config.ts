import { z } from "zod";
import { providerCommonFields } from "../shared/config";
import { port } from "../../src/model/fields";

/**
 * `type: local` — proxies run as detached processes on 127.0.0.1 of the machine running Pulumi.
 * Needs nothing installed; it is the `dev` stack's default and what the end-to-end tests drive.
 */
export const localProviderSchema = z.strictObject({
    type: z.literal("local"),
    ...providerCommonFields,
    /**
     * First port of a fixed range: member `i` listens on `basePort + i`. Unset (the default), each
     * proxy binds an ephemeral port chosen by the kernel, so ports never collide.
     */
    basePort: port().optional(),
    /**
     * How many members share one proxy process. 1 (the default): each member is a process of its own, so
     * a fault or a kill takes one member, as with a VM. Raise it for large fleets: a process costs ~60 MB,
     * a member in a shared one well under 1 MB (docs/local.md). Applies to members created afterwards.
     */
    membersPerProcess: z.number().int().min(1).max(1000).optional(),
});

export type LocalProviderConfig = z.infer<typeof localProviderSchema>;
