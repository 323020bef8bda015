/**
 * The crash matrix (test/helpers/crash-matrix.ts) on the file backend, first part: the service killed at
 * moments 0–2 of each update, and a CLI `up` right after a killed service. The other service moments and
 * the CLI kills are crash-matrix-late.test.ts: two files of about the same length, so `npm test` runs the
 * halves side by side (each has its own project, stack and backend); together they are every case.
 */
import { describe } from "node:test";
import { fileBackend } from "../helpers/backends";
import { crashMatrix } from "../helpers/crash-matrix";

// In a suite of this file's, so the run's per-file times (scripts/test-times.mjs) name this file, not the helper.
describe("crash matrix (file backend, service moments 0-2)", () =>
    crashMatrix({ ...fileBackend, serviceMoments: [0, 1, 2], cliMoments: [] }));
