import type { Queue } from 'bullmq';
import {
  DELIVER_WEBHOOK_JOB,
  MATCH_EVENT_JOB,
  deliverJobId,
  eventJobId,
  type DeliverJobData,
  type EventMatchJobData,
} from '@herald/contract';
import type { Logger } from '@herald/runtime';
import {
  listStrandedWebhookCalls,
  listUnmatchedEvents,
  markWebhookCallsEnqueued,
  type Db,
} from '@herald/store';
import { DELIVER_JOB_OPTIONS, deliverJobs } from './jobs/match-event.js';

export interface SweeperOptions {
  db: Db;
  matchQueue: Queue<EventMatchJobData>;
  deliverQueue: Queue<DeliverJobData>;
  logger: Logger;
  intervalMs: number;
  /** Work older than this whose job may be lost is re-enqueued. */
  afterMs: number;
  /** Rows per query. */
  batchSize?: number;
}

/**
 * Re-enqueues what Redis lost (ARCHITECTURE.md decision 1): events stored but not matched, calls
 * still pending well after they were enqueued, and calls rescheduled whose retry is overdue.
 * Job ids are derived from the rows, so re-adding a job that still exists is a no-op; several
 * delivery processes may sweep at once.
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
    this.#timer = setTimeout(tick, this.options.intervalMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** One pass; returns how many events and calls were re-enqueued. */
  async sweep(): Promise<{ events: number; calls: number }> {
    const { db, matchQueue, deliverQueue, afterMs } = this.options;
    const limit = this.options.batchSize ?? 1000;
    const before = new Date(Date.now() - afterMs);

    let events = 0;
    let afterSeq: string | undefined;
    for (let page = 0; page < 10; page++) {
      const rows = await listUnmatchedEvents(db, { afterSeq, acceptedBefore: before, limit });
      if (rows.length === 0) break;
      await matchQueue.addBulk(
        rows.map((row) => ({
          name: MATCH_EVENT_JOB,
          data: { eventId: row.id },
          opts: { jobId: eventJobId(row.id), removeOnComplete: true, removeOnFail: true },
        })),
      );
      events += rows.length;
      afterSeq = rows[rows.length - 1]!.seq;
      if (rows.length < limit) break;
    }

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
