/**
 * The crash matrix (test/helpers/crash-matrix.ts) on the file backend, second part: the service killed
 * at moments 3–5 of each update (7, 11 and 14 created; 6, 9 and 11 deleted) and a CLI `egress up` killed
 * at each of its three moments. crash-matrix.test.ts runs the rest of the matrix.
 */
import { describe } from "node:test";
import { fileBackend } from "../helpers/backends";
import { crashMatrix } from "../helpers/crash-matrix";

// In a suite of this file's, so the run's per-file times (scripts/test-times.mjs) name this file, not the helper.
describe("crash matrix (file backend, service moments 3-5, CLI kills)", () =>
    crashMatrix({ ...fileBackend, serviceMoments: [3, 4, 5], cliAfterKill: false }));
