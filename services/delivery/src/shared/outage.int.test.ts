import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '@herald/store';
import { createTestDb, type TestDb } from '@herald/testkit';
import { writeUntilStored } from './outage.js';

// writeUntilStored against a real deadlock: Postgres rolls its victim back whole, so the write
// is tried again rather than lost (an attempt's outcome lost means the call is sent again).
describe('writeUntilStored', () => {
  let t: TestDb;
  let other: Db;
  beforeAll(async () => {
    t = await createTestDb('postgres');
    other = t.connect();
    await t.db.query('CREATE TABLE pair (id int PRIMARY KEY, v int NOT NULL)');
    await t.db.query('INSERT INTO pair VALUES (1, 0), (2, 0)');
  });
  afterAll(async () => {
    await other.close();
    await t.cleanup();
  });

  it("tries again a write that was a deadlock's victim", async () => {
    let tries = 0;
    let unblock: () => void = () => undefined;
    const otherHolds = new Promise<void>((resolve) => (unblock = resolve));
    let released: () => void = () => undefined;
    const release = new Promise<void>((resolve) => (released = resolve));
    // Another transaction holds row 1, then (once the write holds row 2) asks for row 2.
    const holder = other.transaction(async (tx) => {
      // The write's backend, not this one, notices the cycle (deadlock_timeout is per session).
      await tx.query("SET LOCAL deadlock_timeout = '10s'");
      await tx.query('UPDATE pair SET v = v + 1 WHERE id = 1');
      unblock();
      await release;
      await tx.query('UPDATE pair SET v = v + 1 WHERE id = 2');
    });
    await otherHolds;
    const written = await writeUntilStored(
      () =>
        t.db.transaction(async (tx) => {
          tries++;
          await tx.query("SET LOCAL deadlock_timeout = '50ms'");
          await tx.query('UPDATE pair SET v = v + 10 WHERE id = 2');
          if (tries === 1) released();
          await tx.query('UPDATE pair SET v = v + 10 WHERE id = 1');
          return tries;
        }),
      () => false,
    );
    await holder;
    expect(written).toBe(2);
    const { rows } = await t.db.query<{ id: number; v: number }>(
      'SELECT id, v FROM pair ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1, v: 11 },
      { id: 2, v: 11 },
    ]);
  });
});
