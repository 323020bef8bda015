/**
 * Which installation a stack is, read from its state before anything runs (the program, gc, liveness
 * hooks, crash undo). Pure over a checkpoint's or an export's resources; the driver and program-main
 * read the state.
 */
import { Installation, isInstallationId, legacyInstallationId, newInstallationId } from "../model";

/** Type token of the identity resource (src/installation-resource.ts): a dynamic resource, module `egress`, type `installation:Identity`. */
export const IDENTITY_TYPE = "pulumi-nodejs:dynamic/egress:installation:Identity";

/** How a stack's installation was found. */
export type InstallationSource =
    /** State holds the identity resource: the id every later run uses. */
    | "recorded"
    /** State holds resources but no identity: a stack made before installation ids; it adopts the id its names imply. */
    | "legacy"
    /** State holds nothing: a new stack (or one destroyed); its first `up` records a fresh id. */
    | "new";

export interface ResolvedInstallation {
    installation: Installation;
    source: InstallationSource;
}

interface Resource {
    type: string;
    delete?: boolean;
    outputs?: Record<string, unknown>;
}

/**
 * The stack's installation from its state's resources. A malformed recorded id is an error (someone edited
 * state): guessing another would make every member look foreign or, worse, adopt another installation's.
 */
export function installationInState(
    resources: readonly Resource[] | undefined,
    project: string,
    stack: string,
): ResolvedInstallation {
    const live = (resources ?? []).filter((r) => !r.delete);
    const identity = live.find((r) => r.type === IDENTITY_TYPE);
    if (identity) {
        const id = identity.outputs?.installation;
        if (!isInstallationId(id))
            throw new Error(
                `stack ${stack}: the state's installation identity (${IDENTITY_TYPE}) has no valid \`installation\` output (got ${JSON.stringify(id)}): state was edited; restore it from the backend's history`,
            );
        return { installation: { id, legacy: identity.outputs?.legacy === true }, source: "recorded" };
    }
    // The stack resource and provider resources exist in every stack that ever ran; anything else is ours.
    const managed = live.some((r) => r.type !== "pulumi:pulumi:Stack" && !r.type.startsWith("pulumi:providers:"));
    if (managed) return { installation: { id: legacyInstallationId(project, stack), legacy: true }, source: "legacy" };
    return { installation: { id: newInstallationId(), legacy: false }, source: "new" };
}
