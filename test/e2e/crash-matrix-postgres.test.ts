/**
 * The crash matrix (test/helpers/crash-matrix.ts) with the stack's Pulumi state in a real PostgreSQL 15
 * (test/helpers/postgres.ts): after each kill no lock row is left, besides everything the file backend's
 * run checks. A subset: the whole matrix took 10.7 min here (vs ~5 on files; every state read is a `pulumi
 * stack export`), so it runs the kill before any step (only a lock row left), the kill mid-way (3 created /
 * 3 deleted: pending creates and deletes), and the CLI kill at 7 created; the file run keeps every case.
 * Each of these leaves a dead lock row in the way of recovery's refresh, the step that differs from the
 * file backend (whose lock files go before the CLI starts): the reports must still name what was stopped.
 */
import { describe } from "node:test";
import { postgresBackend } from "../helpers/backends";
import { crashMatrix } from "../helpers/crash-matrix";

// In a suite of this file's, so the run's per-file times (scripts/test-times.mjs) name this file, not the helper.
describe("crash matrix (PostgreSQL backend)", () =>
    crashMatrix({ ...postgresBackend(), serviceMoments: [0, 2], cliMoments: [1] }));
