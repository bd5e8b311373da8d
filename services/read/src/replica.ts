import { setTimeout as sleep } from 'node:timers/promises';
import type { Request } from 'express';
import { errorMessage, readAfterOf } from '@herald/contract';
import { warnOncePerCause, type Logger } from '@herald/runtime';
import {
  isDbUnavailableError,
  readReplayState,
  sqlState,
  type NamedStatement,
  type QueryResult,
  type Queryable,
  type Row,
} from '@herald/store';
import type { ReadAfterServed } from './metrics.js';
import type { ReadGate } from './read-gate.js';

/** How often the replica is asked how far it has replayed, while some read waits for it. */
const POLL_MS = 5;

// Logged at most once per 10 s each (warnOncePerCause): every read with a token would report it.
const NO_ANSWER =
  'the read replica (READ_DATABASE_URL) does not answer: reads given X-Herald-Read-After go to the primary';
const FELL_BACK =
  'a read on the replica (READ_DATABASE_URL) failed: it runs on the primary instead';
const NOT_A_REPLICA =
  'READ_DATABASE_URL names no replica (pg_last_wal_replay_lsn() is null there): reads given X-Herald-Read-After go to the primary';

interface Waiter {
  position: bigint;
  /** The last round started when it came: a round after it may time it out. */
  round: number;
  deadline: number;
  settle(reached: boolean): void;
}

/**
 * Waits for a replica to replay WAL positions. One loop per process asks the replica
 * (`pg_last_wal_replay_lsn()`) every POLL_MS, only while some read waits, and answers every
 * waiter at once; a position at or below what it saw replayed needs no question at all.
 */
export class ReplayWatcher {
  /** The furthest position seen replayed: replay only moves forward. */
  #replayed = -1n;
  readonly #waiting = new Set<Waiter>();
  #round = 0;
  #polling = false;

  constructor(
    private readonly replica: Queryable,
    private readonly logger: Logger,
  ) {}

  /**
   * Whether the replica has replayed `position`, waiting up to `waitMs` for it (the replica is
   * asked at least once, even with 0). false at once when it cannot say: unreachable, or no
   * replica at all (pg_last_wal_replay_lsn() is null on a primary).
   */
  reached(position: bigint, waitMs: number): Promise<boolean> {
    if (position <= this.#replayed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        position,
        round: this.#round,
        deadline: Date.now() + waitMs,
        settle: (reached) => {
          this.#waiting.delete(waiter);
          resolve(reached);
        },
      };
      this.#waiting.add(waiter);
      void this.#poll();
    });
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      while (this.#waiting.size > 0) {
        const round = ++this.#round;
        let replayed: bigint | null | undefined;
        try {
          replayed = (await readReplayState(this.replica)).replayed;
        } catch (error) {
          warnOncePerCause(this.logger, NO_ANSWER, { err: errorMessage(error) });
        }
        if (replayed === undefined || replayed === null) {
          if (replayed === null) warnOncePerCause(this.logger, NOT_A_REPLICA);
          for (const waiter of this.#waiting) waiter.settle(false);
          break;
        }
        if (replayed > this.#replayed) this.#replayed = replayed;
        const now = Date.now();
        for (const waiter of this.#waiting) {
          if (waiter.position <= this.#replayed) waiter.settle(true);
          else if (waiter.round < round && now >= waiter.deadline) waiter.settle(false);
        }
        if (this.#waiting.size > 0) await sleep(POLL_MS);
      }
    } finally {
      this.#polling = false;
    }
  }
}

/** The replica's side of the read routes. */
export interface Replica {
  gate: ReadGate;
  replay: ReplayWatcher;
  logger: Logger;
}

/**
 * SQLSTATEs a standby cancels a statement with when it conflicts with the WAL it replays ("canceling
 * statement due to conflict with recovery": rows or a lock the primary took away, past
 * max_standby_streaming_delay; 40P01 when the standby found a deadlock with its replay). On a
 * replica nothing else raises them: a read there never writes.
 */
const RECOVERY_CONFLICT = new Set(['40001', '40P01']);

/**
 * Whether a statement that failed on the replica is run again on the primary: the replica could
 * not be reached (stopped, restarting, too many connections) or cancelled it for a recovery
 * conflict. Both say nothing about the statement; the primary answers it as it would have.
 */
function isReplicaFailure(error: unknown): boolean {
  const state = sqlState(error);
  return (state !== undefined && RECOVERY_CONFLICT.has(state)) || isDbUnavailableError(error);
}

/**
 * Where a read runs (docs/api.md, Read your own events). Without a replica, on the primary.
 * With one, on the replica; but a read that gives a read-after position runs there only once the
 * replica has replayed that far, waiting up to `waitMs` (READ_AFTER_WAIT_MS), and on the primary
 * otherwise, so that it never sees data older than the position.
 */
export class ReadSources {
  constructor(
    private readonly primary: ReadGate,
    private readonly replica: Replica | undefined,
    private readonly waitMs: number,
    private readonly served: ReadAfterServed,
  ) {}

  /**
   * The database one request of `tokenId` reads: `gate`'s (see gateFor) and, once a statement
   * failed on the replica for the replica's sake (isReplicaFailure), the primary for that
   * statement and the rest of the request. A stopped replica or a recovery conflict thus costs
   * the request a second try, not an error.
   */
  dbFor(gate: ReadGate, tokenId: string): Queryable {
    const primary = this.primary.forToken(tokenId);
    const replica = this.replica;
    if (!replica || gate !== replica.gate) return primary;
    let current = replica.gate.forToken(tokenId);
    return {
      query: async <R extends Row = Row>(
        statement: string | NamedStatement,
        params?: readonly unknown[],
      ): Promise<QueryResult<R>> => {
        if (current === primary) return primary.query<R>(statement, params);
        try {
          return await current.query<R>(statement, params);
        } catch (error) {
          if (!isReplicaFailure(error)) throw error;
          warnOncePerCause(replica.logger, FELL_BACK, {
            err: errorMessage(error),
            code: sqlState(error) ?? (error as { code?: unknown }).code,
          });
          current = primary;
          return primary.query<R>(statement, params);
        }
      },
    };
  }

  async gateFor(readAfter: bigint | undefined): Promise<ReadGate> {
    const replica = this.replica;
    if (readAfter === undefined) return replica?.gate ?? this.primary;
    if (replica && (await replica.replay.reached(readAfter, this.waitMs))) {
      this.served.inc({ served_by: 'replica' });
      return replica.gate;
    }
    this.served.inc({ served_by: 'primary' });
    return this.primary;
  }
}

/** The database a request of `tokenId` reads (docs/api.md, Read your own events). */
export async function requestDb(
  deps: { sources: ReadSources },
  req: Request,
  tokenId: string,
): Promise<Queryable> {
  const gate = await deps.sources.gateFor(readAfterOf(req.headers['x-herald-read-after']));
  return deps.sources.dbFor(gate, tokenId);
}
