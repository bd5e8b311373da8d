import { MATCH_JOB_EVENTS_MAX, errorMessage } from '@herald/contract';
import { enqueueEventMatches, type LocalMatcher } from '@herald/runtime';
import { findEventsToMatch } from '@herald/store';
import type { DeliveryMetrics } from '../../metrics.js';
import type { NewCall } from '../../shared/calls.js';
import type { FirstAttempts } from '../attempt/first-attempts.js';
import type { SystemResources } from '../resources.js';
import type { Matcher } from './match.js';

/**
 * Matches running at once. Few: ids that come while they run gather, and the next match takes
 * them all (one read, one statement for many events), as a match job takes a request's batch.
 */
const LOCAL_MATCH_CONCURRENCY = 2;

export type LocalMatchesDeps = Pick<
  SystemResources,
  'db' | 'lease' | 'matchQueue' | 'logger' | 'closing'
> & {
  matcher: Pick<Matcher, 'match'>;
  firstAttempts: Pick<FirstAttempts<NewCall>, 'add' | 'active'>;
  metrics: Pick<DeliveryMetrics, 'eventsMatchedLocally'>;
  /** Ids are taken while fewer first attempts than this are queued or in flight (back-pressure). */
  maxFirstAttempts: number;
  /** How long a match that failed here waits for the queue before leaving it to the sweeper. */
  enqueueTimeoutMs: number;
};

/**
 * The match of events this process's ingest committed, in memory (LocalMatchHandOff): the same
 * work as a match job (read the events, make their calls under this process's lease, start their
 * first attempts here) without the job's round trips through the queue. It takes ids only while
 * this process may hold new calls and has room; otherwise they go on the queue, where any
 * process's match worker takes them. A match that fails here (Postgres away, an error) puts its
 * ids on the queue, which retries; if that fails too, or the process dies first, the events stay
 * unmatched in Postgres and the sweeper enqueues them.
 */
export class LocalMatches implements LocalMatcher {
  #pending: string[] = [];
  #running = 0;
  #idle: (() => void)[] = [];

  constructor(private readonly deps: LocalMatchesDeps) {}

  offer(eventIds: readonly string[]): boolean {
    const { deps } = this;
    if (deps.closing() || !deps.lease.valid) return false;
    if (deps.firstAttempts.active + this.#pending.length >= deps.maxFirstAttempts) return false;
    this.#pending.push(...eventIds);
    deps.metrics.eventsMatchedLocally.inc(eventIds.length);
    this.#pump();
    return true;
  }

  /** Resolves once every id taken so far is matched (or handed to the queue). */
  async drain(): Promise<void> {
    if (this.#running === 0 && this.#pending.length === 0) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    while (this.#running < LOCAL_MATCH_CONCURRENCY && this.#pending.length > 0) {
      const ids = this.#pending.splice(0, MATCH_JOB_EVENTS_MAX);
      this.#running++;
      void this.#match(ids).finally(() => {
        this.#running--;
        this.#pump();
        if (this.#running === 0 && this.#pending.length === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
    }
  }

  async #match(ids: string[]): Promise<void> {
    const { deps } = this;
    try {
      const found = await findEventsToMatch(deps.db, ids);
      deps.firstAttempts.add(await deps.matcher.match(found.events, found.webhooksGeneration));
      // Committed before they were handed over, they are found; should one not be, its match
      // job retries (and counts it) as for any other.
      const seen = new Set(found.events.map((event) => event.id));
      const missing = ids.filter((id) => !seen.has(id));
      if (missing.length > 0) await this.#enqueue(missing);
    } catch (error) {
      deps.logger.warn(
        { err: errorMessage(error), events: ids.length },
        'events not matched here; they go on the match queue',
      );
      await this.#enqueue(ids);
    }
  }

  async #enqueue(ids: readonly string[]): Promise<void> {
    const { deps } = this;
    await enqueueEventMatches(deps.matchQueue, ids, deps.enqueueTimeoutMs).catch((error: unknown) =>
      deps.logger.warn(
        { err: errorMessage(error), events: ids.length },
        'events neither matched nor enqueued; the sweeper will enqueue them',
      ),
    );
  }
}
