/**
 * Installations in tests: a fixed one for tests that build contexts, scopes and labels by hand, and the
 * one a stack's own state records (for names that carry it, such as KVM domains).
 */
import type { Installation } from "../../src/model";
import { checkpointResources, installationInState, type ResolvedInstallation } from "../../src/engine";

export const TEST_INSTALLATION: Installation = { id: "0a1b2c3d", legacy: false };

/** The installation a project's stack has, read from its own (local) backend's checkpoint; `source` says whether state recorded it. */
export function installationOf(p: { backendDir: string; stack: string }): ResolvedInstallation {
    return installationInState(checkpointResources(p.backendDir, p.stack), "egress", p.stack);
}
