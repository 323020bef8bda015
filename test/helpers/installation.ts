/** A fixed installation for tests that build contexts, scopes and labels by hand (not from a stack's state). */
import type { Installation } from "../../src/model";

export const TEST_INSTALLATION: Installation = { id: "0a1b2c3d", legacy: false };
