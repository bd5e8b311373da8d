import { errorMessage } from '@herald/contract';
import { enqueueEventMatches, type EventMatchQueue, type Logger } from '@herald/runtime';
import { emitNotices, isDbUnavailableError, type Db } from '@herald/store';
import type { Counter } from 'prom-client';

export interface NoticesOptions {
  db: Db;
  matchQueue: EventMatchQueue;
  logger: Logger;
  /** Failed attempts in a row that make a webhook "failing" (0: no failing/recovered notices). */
  failingAfter: number;
  pollMs: number;
  /** How long the enqueue of a notice's match waits for Redis (the sweeper matches it anyway). */
  enqueueTimeoutMs: number;
  emitted: Counter;
}

/**
 * Operational notices (docs/api.md, Notices): every `pollMs`, stores the notices of what changed
 * since last told (webhook health, bulk jobs: emitNotices) and enqueues their match at once. A
 * notice is an event like a producer's: if the enqueue fails, or the process dies after the
 * statement, the sweeper matches it.
 */
export class Notices {
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;

  constructor(private readonly options: NoticesOptions) {}

  start(): void {
    this.#timer = setInterval(() => {
      this.#polling ??= this.poll()
        .then(() => undefined)
        .finally(() => (this.#polling = undefined));
    }, this.options.pollMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#polling;
  }

  /** One look; returns the notices' event ids. */
  async poll(): Promise<string[]> {
    const { db, logger } = this.options;
    let ids: string[];
    try {
      ids = await emitNotices(db, { failingAfter: this.options.failingAfter });
    } catch (error) {
      if (!isDbUnavailableError(error)) logger.warn({ err: errorMessage(error) }, 'notices failed');
      return [];
    }
    if (ids.length === 0) return ids;
    this.options.emitted.inc(ids.length);
    logger.info({ notices: ids.length }, 'notices emitted');
    await enqueueEventMatches(this.options.matchQueue, ids, this.options.enqueueTimeoutMs).catch(
      (error: unknown) =>
        logger.warn({ err: errorMessage(error) }, 'notice match not enqueued; the sweeper will'),
    );
    return ids;
  }
}
