import { parseLsn } from '@herald/contract';
import type { NamedStatement, Queryable } from './db.js';

/**
 * Positions in the write-ahead log, for reads from a streaming replica (docs/architecture.md,
 * Read replicas): how far the primary's commits have gone, how far a replica has replayed.
 */

/**
 * How far the commits that have returned so far reach, read on the primary after a commit
 * returned (on any connection). Not the insert position read before COMMIT: the commit record
 * comes after it. With synchronous_commit on (POST /events's), a commit returns once its record
 * is flushed, so the flush position is past it, and a replica is sent exactly what is flushed;
 * with it off, the record may still wait in memory, and only the insert position is surely past
 * it (the replica then gets there when the WAL writer flushes). The insert position may stand
 * just past the header of a WAL page no record has reached yet; a replica then gets there with
 * the next record written: later, never too early.
 */
const COMMIT_POSITION: NamedStatement = {
  name: 'herald_commit_position',
  text: `SELECT (CASE WHEN current_setting('synchronous_commit') = 'off'
           THEN pg_current_wal_insert_lsn() ELSE pg_current_wal_flush_lsn() END)::text AS lsn`,
};

/** The position that every commit returned so far has reached (see COMMIT_POSITION). */
export async function readCommitPosition(db: Queryable): Promise<bigint> {
  const { rows } = await db.query<{ lsn: string }>(COMMIT_POSITION);
  return commitPositionOf(rows);
}

/** COMMIT_POSITION's text, to run after a commit in the same script (writeItemBatchCommitted). */
export const COMMIT_POSITION_SQL = COMMIT_POSITION.text;

/** The position in COMMIT_POSITION's (or COMMIT_POSITION_SQL's) rows. */
export function commitPositionOf(rows: readonly { lsn?: unknown }[]): bigint {
  return parseLsn(String(rows[0]!.lsn));
}

export interface ReplayState {
  /**
   * The end of the last WAL record the server replayed: every transaction whose commit ends at
   * or before it is visible to a new snapshot there. null when the server is no replica.
   */
  replayed: bigint | null;
  /**
   * Seconds since the primary committed the last transaction the replica replayed (its clock
   * against the primary's); null when it replayed none, or is no replica.
   */
  lastReplayedAgeSeconds: number | null;
}

/** Where a replica's replay stands (cheap: two functions reading shared memory). */
export async function readReplayState(db: Queryable): Promise<ReplayState> {
  const { rows } = await db.query<{ replayed: string | null; age: number | null }>({
    name: 'herald_replay_state',
    text: `SELECT pg_last_wal_replay_lsn()::text AS replayed,
             extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 AS age`,
  });
  const row = rows[0]!;
  return {
    replayed: row.replayed === null ? null : parseLsn(row.replayed),
    lastReplayedAgeSeconds: row.age,
  };
}
