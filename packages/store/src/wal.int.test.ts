import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLsn } from '@herald/contract';
import {
  WAIT_TIMEOUT_MS,
  createReplicatedPostgres,
  waitFor,
  type ReplicatedPostgres,
} from '@herald/testkit';
import { createPostgresDb, type Db } from './db.js';
import { readCommitPosition, readReplayState } from './wal.js';

// A primary and a replica of the file's own: replay is paused and resumed here, and the WAL
// writer slowed, which no test may do to the shared server.
let cluster: ReplicatedPostgres;
let primary: Db;
let asyncPrimary: Db;
let replica: Db;

beforeAll(async () => {
  cluster = await createReplicatedPostgres();
  // An asynchronous commit's record then stays unflushed until a synchronous commit flushes it.
  await cluster.primary.psql(`ALTER SYSTEM SET wal_writer_delay = '10s'`);
  await cluster.primary.psql('SELECT pg_reload_conf()');
  primary = createPostgresDb({
    connectionString: cluster.primary.url('herald'),
    maxConnections: 2,
  });
  asyncPrimary = createPostgresDb({
    connectionString: cluster.primary.url('herald'),
    maxConnections: 2,
    synchronousCommit: false,
  });
  replica = createPostgresDb({
    connectionString: cluster.replica.url('herald'),
    maxConnections: 2,
  });
  await primary.exec('CREATE TABLE notes (id int PRIMARY KEY)');
  // Replayed before any test pauses the replay (a busy machine's replica may lag behind).
  await waitFor(async () => {
    const { rows } = await replica.query<{ table: string | null }>(
      `SELECT to_regclass('notes')::text AS table`,
    );
    expect(rows[0]!.table).toBe('notes');
  });
}, 120_000);

afterAll(async () => {
  await Promise.all([primary?.close(), asyncPrimary?.close(), replica?.close()]);
  await cluster?.destroy();
}, 60_000);

/** Inserts a note in a transaction; the insert position read just before its COMMIT. */
async function insertNote(db: Db, id: number): Promise<bigint> {
  let beforeCommit = 0n;
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO notes (id) VALUES ($1)', [id]);
    const { rows } = await tx.query<{ lsn: string }>(
      'SELECT pg_current_wal_insert_lsn()::text AS lsn',
    );
    beforeCommit = parseLsn(rows[0]!.lsn);
  });
  return beforeCommit;
}

async function replicaHas(id: number): Promise<boolean> {
  const { rows } = await replica.query('SELECT 1 FROM notes WHERE id = $1', [id]);
  return rows.length === 1;
}

describe('the commit position', () => {
  it('is past the commit record, and the replica shows the commit once replayed that far', async () => {
    for (const [db, id] of [
      [primary, 1],
      [asyncPrimary, 2],
    ] as const) {
      await cluster.replica.pauseReplay();
      const beforeCommit = await insertNote(db, id);
      const position = await readCommitPosition(db);
      // The commit record lies after what was inserted before COMMIT.
      expect(position).toBeGreaterThan(beforeCommit);
      const paused = await readReplayState(replica);
      expect(paused.replayed).toBeLessThan(position);
      expect(await replicaHas(id)).toBe(false);

      await cluster.replica.resumeReplay();
      // A synchronous commit flushes the asynchronous one's record too (the WAL writer would in
      // 10 s here): only flushed WAL goes to the replica.
      await primary.query('INSERT INTO notes (id) VALUES ($1)', [-id]);
      await expect
        .poll(async () => (await readReplayState(replica)).replayed! >= position, {
          timeout: WAIT_TIMEOUT_MS,
          interval: 5,
        })
        .toBe(true);
      expect(await replicaHas(id)).toBe(true);
    }
  });

  it('is no replay position on the primary', async () => {
    expect(await readReplayState(primary)).toEqual({
      replayed: null,
      lastReplayedAgeSeconds: null,
    });
    const state = await readReplayState(replica);
    expect(state.replayed).toBeGreaterThan(0n);
    expect(state.lastReplayedAgeSeconds).toBeGreaterThanOrEqual(0);
  });
});
