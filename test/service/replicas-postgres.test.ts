/**
 * Three `egress serve` replicas of one stack on a real redis-server, the stack's Pulumi state in a real
 * PostgreSQL 15 started by this test (test/helpers/postgres.ts; PULUMI_BACKEND_URL=postgres://… for
 * every egress process, docs/engine.md): the same suite as replicas.test.ts (test/helpers/replicas-suite.ts).
 * What differs underneath: state is read through the engine (`pulumi stack export`), the stack watch polls
 * the checkpoint row, and the leader is killed while its engine holds a lock row, which the new leader's
 * recovery removes (a dead pid of this host); after the convergence no lock row may be left, and no
 * checkpoint may have gone to a file backend.
 */
import { describe } from "node:test";
import { postgresBackend } from "../helpers/backends";
import { replicasSuite } from "../helpers/replicas-suite";

// In a suite of this file's, so the run's per-file times (scripts/test-times.mjs) name this file, not the helper.
describe("replicas (PostgreSQL backend)", () => replicasSuite(postgresBackend()));
