/**
 * The crash matrix (test/helpers/crash-matrix.ts) on the file backend with the pool spread over shard
 * stacks of 4 (`membersPerStack`, issue 33): 15 members are the installation's stack's 0–3 and shards 1–3,
 * so the service killed at "3 created" and "11 created" of a 0→15 up (and at the matching moments of the
 * 15→3 up) dies in runs on different stacks, and a CLI `egress up` is killed with 7 created. After each: no
 * engine process left, a restart converges, proxy processes = outputs (every stack's), gc finds nothing,
 * no lock left.
 */
import { describe } from "node:test";
import { fileBackend } from "../helpers/backends";
import { crashMatrix } from "../helpers/crash-matrix";

// In a suite of this file's, so the run's per-file times (scripts/test-times.mjs) name this file, not the helper.
describe("crash matrix (shards)", () =>
    crashMatrix(
        { ...fileBackend, serviceMoments: [2, 4], cliMoments: [1], cliAfterKill: false },
        { membersPerStack: 4 },
    ));
