import { setTimeout as sleep } from 'node:timers/promises';
import type { Request } from 'express';
import { errorMessage, readAfterOf } from '@herald/contract';
import { warnOncePerCause, type Logger } from '@herald/runtime';
import { readReplayState, type Queryable } from '@herald/store';
import type { ReadAfterServed } from './metrics.js';
import type { ReadGate } from './read-gate.js';

/** How often the replica is asked how far it has replayed, while some read waits for it. */
const POLL_MS = 5;

// Logged at most once per 10 s each (warnOncePerCause): every read with a token would report it.
const NO_ANSWER =
  'the read replica (READ_DATABASE_URL) does not answer: reads given X-Herald-Read-After go to the primary';
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
  return gate.forToken(tokenId);
}
