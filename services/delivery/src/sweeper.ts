import { Counter, type Registry } from 'prom-client';
import { enqueueEventMatches, type EventMatchQueue, type Logger } from '@herald/runtime';
import {
  deleteFinishedWebhookCalls,
  listStrandedWebhookCalls,
  listUnmatchedEvents,
  markWebhookCallsEnqueued,
  type Db,
  type Queryable,
} from '@herald/store';
import { deliverJobs, type DeliverQueue } from './jobs/match-event.js';

// One counter per (registry, name): several sweepers of one process (tests) share it.
const counters = new WeakMap<Registry, Map<string, Counter>>();
function counterOf(registry: Registry, name: string, help: string): Counter {
  let byName = counters.get(registry);
  if (!byName) counters.set(registry, (byName = new Map<string, Counter>()));
  let counter = byName.get(name);
  if (!counter) {
    counter = new Counter({ name, help, registers: [registry] });
    byName.set(name, counter);
  }
  return counter;
}

const sweptCounter = (registry: Registry): Counter =>
  counterOf(
    registry,
    'herald_sweeper_events_enqueued_total',
    'Stored but unmatched events the sweeper (re-)enqueued on event-match',
  );

export interface EventSweepOptions {
  db: Queryable;
  queue: EventMatchQueue;
  registry: Registry;
  /** Events younger than this are left to the ingest request that is enqueuing them. */
  graceMs: number;
  /** Rows read and enqueued per round trip. */
  batchSize: number;
  /** How long one enqueue may wait for Redis. */
  enqueueTimeoutMs: number;
}

/**
 * Enqueues every stored event the match worker has not marked matched (events.matched_at), in
 * acceptance order: what ingest could not enqueue (Redis down) or Redis lost (flushed,
 * restarted) is matched after all. Job ids are the event ids, so an event whose job still
 * exists is not enqueued twice. Returns how many ids it enqueued.
 */
export async function sweepUnmatchedEvents(options: EventSweepOptions): Promise<number> {
  const counter = sweptCounter(options.registry);
  const acceptedBefore = new Date(Date.now() - options.graceMs);
  let afterSeq: string | undefined;
  let total = 0;
  for (;;) {
    const page = await listUnmatchedEvents(options.db, {
      ...(afterSeq ? { afterSeq } : {}),
      acceptedBefore,
      limit: options.batchSize,
    });
    if (page.length === 0) return total;
    await enqueueEventMatches(
      options.queue,
      page.map((event) => event.id),
      options.enqueueTimeoutMs,
    );
    counter.inc(page.length);
    total += page.length;
    afterSeq = page[page.length - 1]!.seq;
    if (page.length < options.batchSize) return total;
  }
}

export interface SweeperOptions {
  db: Db;
  matchQueue: EventMatchQueue;
  deliverQueue: DeliverQueue;
  logger: Logger;
  registry: Registry;
  /** Time between sweeps (the first one runs at start). */
  intervalMs: number;
  /** A call still pending this long after it was enqueued has lost its job: re-enqueue it. */
  afterMs: number;
  /** Events younger than this are left to the ingest request still enqueuing them. */
  eventGraceMs: number;
  /** Rows per query. */
  batchSize: number;
  /** How long one enqueue of events may wait for Redis. */
  enqueueTimeoutMs: number;
  /** How long a finished call stays in the delivery log; null keeps calls forever. */
  retentionMs: number | null;
  /** Time between two prunings of the delivery log (the first one runs at start). */
  pruneIntervalMs: number;
  /**
   * Delete statements one pass runs at most (default 100). A larger backlog (a first pruning of
   * a big log) goes on at the next passes, so re-enqueueing lost work is never held up long.
   */
  pruneStatementsPerPass?: number;
}

/**
 * The one sweeper (ARCHITECTURE.md decision 1), started once per delivery process by
 * startDelivery: re-enqueues what Redis lost or never got — events stored but not matched, calls
 * still pending well after they were enqueued, and calls rescheduled whose retry is overdue. Job
 * ids are derived from the rows, so re-adding a job that still exists is a no-op; several delivery
 * processes may sweep at once. It also prunes the delivery log: finished calls older than the
 * retention are deleted, in batches, every pruneIntervalMs.
 */
export class Sweeper {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  /** When the next pruning is due (0: at the next pass, as at start or after a capped one). */
  #pruneDueAt = 0;
  readonly #pruned: Counter;

  constructor(private readonly options: SweeperOptions) {
    this.#pruned = counterOf(
      options.registry,
      'herald_delivery_log_pruned_total',
      'Finished webhook calls deleted from the delivery log past DELIVERY_LOG_RETENTION_DAYS',
    );
  }

  start(): void {
    const tick = (): void => {
      this.#running = this.#pass().finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(tick, this.options.intervalMs);
      });
    };
    tick();
  }

  /** A sweep, and a pruning when one is due; each failure is logged and retried next time. */
  async #pass(): Promise<void> {
    const warn = (error: unknown, message: string): void =>
      this.options.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        message,
      );
    await this.sweep().catch((error: unknown) => warn(error, 'sweep failed; will retry'));
    if (Date.now() < this.#pruneDueAt) return;
    this.#pruneDueAt = Date.now() + this.options.pruneIntervalMs;
    await this.prune().catch((error: unknown) =>
      warn(error, 'pruning the delivery log failed; will retry'),
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /**
   * Deletes the finished calls older than the retention, a batch per statement until none is
   * left, the sweeper stops, or pruneStatementsPerPass statements have run (the next pass goes
   * on); returns how many.
   */
  async prune(): Promise<number> {
    const { retentionMs, batchSize, pruneStatementsPerPass = 100 } = this.options;
    if (retentionMs === null) return 0;
    const before = new Date(Date.now() - retentionMs);
    let total = 0;
    for (let statements = 0; !this.#stopped; statements++) {
      if (statements === pruneStatementsPerPass) {
        this.#pruneDueAt = 0; // calls left: the next pass goes on
        break;
      }
      const deleted = await deleteFinishedWebhookCalls(this.options.db, before, batchSize);
      this.#pruned.inc(deleted);
      total += deleted;
      if (deleted < batchSize) break;
    }
    if (total > 0) this.options.logger.info({ calls: total }, 'delivery log pruned');
    return total;
  }

  /** One pass; returns how many events and calls were re-enqueued. */
  async sweep(): Promise<{ events: number; calls: number }> {
    const { db, afterMs } = this.options;
    const limit = this.options.batchSize;
    const events = await sweepUnmatchedEvents({
      db,
      queue: this.options.matchQueue,
      registry: this.options.registry,
      graceMs: this.options.eventGraceMs,
      batchSize: limit,
      enqueueTimeoutMs: this.options.enqueueTimeoutMs,
    });

    const calls = await this.#sweepStrandedCalls(new Date(Date.now() - afterMs));
    if (events + calls > 0) {
      this.options.logger.info({ events, calls }, 'sweeper re-enqueued work');
    }
    return { events, calls };
  }

  /**
   * Re-enqueues the calls whose job Redis may have lost (pending past the job lock, or
   * rescheduled and overdue), page after page until none is left: a whole backlog in one pass
   * after a FLUSHALL, not one page per interval. Returns how many.
   */
  async #sweepStrandedCalls(before: Date): Promise<number> {
    const { db, deliverQueue, batchSize: limit } = this.options;
    let total = 0;
    for (;;) {
      const stranded = await listStrandedWebhookCalls(db, { before, limit });
      // A rescheduled call's job is its next retry, under that retry's job id.
      const jobs = deliverJobs(
        stranded.map((c) => ({
          id: c.id,
          webhookId: c.webhookId,
          retry: c.status === 'rescheduled' ? c.attemptedAutoRetriesCount + 1 : undefined,
        })),
      );
      if (jobs.length > 0) await deliverQueue.addBulk(jobs);
      // Restarts their clocks: they leave the list, and come back only if still not done later.
      await markWebhookCallsEnqueued(
        db,
        stranded.map((c) => c.id),
      );
      total += jobs.length;
      if (stranded.length < limit || this.#stopped) return total;
    }
  }
}
