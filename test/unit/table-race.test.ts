/**
 * The backend's state-table race (src/engine/stack-session.ts `pastTableRace`): processes opening a new
 * PostgreSQL database together all run `CREATE TABLE IF NOT EXISTS`, and the losers fail. The error text
 * here is the one a chaos run's replica died of (bench/chaos.ts, three replicas started at once). The real
 * race needs processes aligned to the millisecond; test/service/replica-start.test.ts opens a new
 * database each round and reports when it met it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { pastTableRace } from "../../src/engine/stack-session";

const RACE =
    'code: 1\n stdout: \n stderr: error: unable to open bucket postgres://egress:[redacted]@127.0.0.1:20424/postgres?sslmode=disable: failed to create table pulumi_state: pq: duplicate key value violates unique constraint "pg_type_typname_nsp_index" (23505)\n';

/** The same race met a moment later: the table's row type is there already (a CI run's replica died of it). */
const RACE_TYPE =
    'code: 1\n stdout: \n stderr: error: unable to open bucket postgres://egress:[redacted]@127.0.0.1:29605/start3r2?sslmode=disable: failed to create table pulumi_state: pq: type "pulumi_state" already exists (42710)\n';

test("either error of the race (23505 on the catalog, 42710 on the row type) opens again", async () => {
    for (const race of [RACE, RACE_TYPE]) {
        let calls = 0;
        const opened = await pastTableRace(
            async () => {
                if (++calls === 1) throw new Error(race);
                return "stack";
            },
            () => undefined,
        );
        assert.equal(opened, "stack", race);
        assert.equal(calls, 2, race);
    }
});

test("a loser of the state-table race opens again, with a notice; other errors pass through at once", async () => {
    const notices: string[] = [];
    let calls = 0;
    const opened = await pastTableRace(
        async () => {
            if (++calls === 1) throw new Error(RACE);
            return "stack";
        },
        (l) => notices.push(l),
    );
    assert.equal(opened, "stack");
    assert.equal(calls, 2);
    assert.deepEqual(notices, [
        "another process was creating the backend's state table at the same moment: opening again",
    ]);

    let other = 0;
    await assert.rejects(
        pastTableRace(
            async () => {
                other++;
                throw new Error("error: unable to open bucket postgres://…: connection refused");
            },
            () => assert.fail("no notice for another error"),
        ),
        /connection refused/,
    );
    assert.equal(other, 1, "another error is not retried here (the engine retry owns backend outages)");
});

test("the race met on every try gives up after four opens, with the race's own error", async () => {
    let calls = 0;
    await assert.rejects(
        pastTableRace(
            async () => {
                calls++;
                throw new Error(RACE);
            },
            () => undefined,
        ),
        /failed to create table pulumi_state/,
    );
    assert.equal(calls, 4);
});
