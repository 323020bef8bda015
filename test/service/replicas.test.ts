/**
 * Three `egress serve` replicas of one stack on a real redis-server, the stack's Pulumi state on the file
 * backend (procProject's own): the suite in test/helpers/replicas-suite.ts (one leader, the same members
 * and health everywhere, a scale through a follower, leases across replicas, kill -9 of the leader
 * mid-scale). replicas-postgres.test.ts runs the same suite with the state in PostgreSQL.
 */
import { describe } from "node:test";
import { fileBackend } from "../helpers/backends";
import { replicasSuite } from "../helpers/replicas-suite";

// In a suite of this file's, so the run's per-file times (scripts/test-times.mjs) name this file, not the helper.
describe("replicas (file backend)", () => replicasSuite(fileBackend));
