import { Counter, type Registry } from 'prom-client';
import { DELIVER_WEBHOOK_JOB, deliverJobId } from '@herald/contract';
import { enqueueEventMatches, type EventMatchQueue, type Logger } from '@herald/runtime';
import {
  listStrandedWebhookCalls,
  listUnmatchedEvents,
  markWebhookCallsEnqueued,
  type Db,
  type Queryable,
} from '@herald/store';
import { DELIVER_JOB_OPTIONS, deliverJobs, type DeliverQueue } from './jobs/match-event.js';

const counters = new WeakMap<Registry, Counter>();
function sweptCounter(registry: Registry): Counter {
  let counter = counters.get(registry);
  if (!counter) {
    counter = new Counter({
      name: 'herald_sweeper_events_enqueued_total',
      help: 'Stored but unmatched events the sweeper (re-)enqueued on event-match',
      registers: [registry],
    });
    counters.set(registry, counter);
  }
  return counter;
}

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
}

/**
 * The one sweeper (ARCHITECTURE.md decision 1), started once per delivery process by
 * startDelivery: re-enqueues what Redis lost or never got — events stored but not matched, calls
 * still pending well after they were enqueued, and calls rescheduled whose retry is overdue. Job
 * ids are derived from the rows, so re-adding a job that still exists is a no-op; several delivery
 * processes may sweep at once.
 */
export class Sweeper {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(private readonly options: SweeperOptions) {}

  start(): void {
    const tick = (): void => {
      this.#running = this.sweep()
        .then(() => undefined)
        .catch((error: unknown) => {
          this.options.logger.warn(
            { err: error instanceof Error ? error.message : String(error) },
            'sweep failed; will retry',
          );
        })
        .finally(() => {
          if (!this.#stopped) this.#timer = setTimeout(tick, this.options.intervalMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** One pass; returns how many events and calls were re-enqueued. */
  async sweep(): Promise<{ events: number; calls: number }> {
    const { db, deliverQueue, afterMs } = this.options;
    const limit = this.options.batchSize;
    const events = await sweepUnmatchedEvents({
      db,
      queue: this.options.matchQueue,
      registry: this.options.registry,
      graceMs: this.options.eventGraceMs,
      batchSize: limit,
      enqueueTimeoutMs: this.options.enqueueTimeoutMs,
    });

    const before = new Date(Date.now() - afterMs);
    const stranded = await listStrandedWebhookCalls(db, {
      pendingBefore: before,
      dueBefore: before,
      limit,
    });
    const pending = stranded.filter((c) => c.status === 'pending');
    const jobs = [
      ...deliverJobs(pending),
      ...stranded
        .filter((c) => c.status === 'rescheduled')
        .map((c) => {
          const retry = c.attemptedAutoRetriesCount + 1;
          return {
            name: DELIVER_WEBHOOK_JOB,
            data: { callId: c.id, webhookId: c.webhookId, retry },
            opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverJobId(c.id, retry) },
          };
        }),
    ];
    if (jobs.length > 0) await deliverQueue.addBulk(jobs);
    await markWebhookCallsEnqueued(
      db,
      pending.map((c) => c.id),
    );
    if (events + jobs.length > 0) {
      this.options.logger.info({ events, calls: jobs.length }, 'sweeper re-enqueued work');
    }
    return { events, calls: jobs.length };
  }
}
