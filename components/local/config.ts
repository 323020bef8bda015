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
});

export type LocalProviderConfig = z.infer<typeof localProviderSchema>;
