import type { Registry } from 'prom-client';
import {
  enqueueDeliveries,
  enqueueDueCalls,
  requeueEventMatches,
  type DeliverQueue,
  type EventMatchQueue,
  type Logger,
} from '@herald/runtime';
import {
  createWebhookCallMonths,
  deleteExpiredLeases,
  deleteFinishedWebhookCalls,
  deleteOldWebhookStats,
  disableFailingWebhooks,
  dropWebhookCallMonths,
  listOrphanedWebhookCalls,
  listStrandedWebhookCalls,
  listWaitingWebhookCalls,
  listUnmatchedEvents,
  markWebhookCallsEnqueued,
  monthStart,
  releaseStuckFlowCalls,
  type Db,
  type Queryable,
} from '@herald/store';
import { errorMessage } from '@herald/contract';
import { deliveryMetrics, type DeliveryMetrics } from '../../metrics.js';
import type { DeliverySettings } from '../../settings.js';
import type { SystemResources } from '../resources.js';

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
 * acceptance order: what ingest could not enqueue (Redis down), Redis lost (flushed, restarted)
 * or a match job gave up on (out of attempts) is matched after all. A page whose job is still
 * waiting or running is left to it; one whose job finished is enqueued anew. Returns how many ids
 * it put in new jobs (what herald_sweeper_events_enqueued_total counts) and how many were
 * already queued.
 */
export async function sweepUnmatchedEvents(
  options: EventSweepOptions,
): Promise<{ added: number; queued: number }> {
  const counter = deliveryMetrics(options.registry).sweptEvents;
  let afterSeq: string | undefined;
  const total = { added: 0, queued: 0 };
  for (;;) {
    const page = await listUnmatchedEvents(options.db, {
      ...(afterSeq ? { afterSeq } : {}),
      acceptedMsAgo: options.graceMs,
      limit: options.batchSize,
    });
    if (page.length === 0) return total;
    const { added, queued } = await requeueEventMatches(
      options.queue,
      page.map((event) => event.id),
      options.enqueueTimeoutMs,
    );
    counter.inc(added);
    total.added += added;
    total.queued += queued;
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
  /**
   * A process's hold on the calls queued in its memory lasts this long past its last heartbeat;
   * then the sweeper takes them over.
   */
  leaseMs: number;
  /**
   * How long this process has renewed its own lease without a miss (ms; 0 while it cannot).
   * Calls of an expired lease are taken over only once this reaches leaseMs: after the database
   * was away, every live process gets a whole lease to renew before anyone's calls move.
   */
  healthyForMs: () => number;
  /** This process's lease id: the sweeper never takes over its own process's calls. */
  leaseId?: string;
  /**
   * Re-asserts the deployment's claim on the Redis prefix. 'written' means the key was gone: Redis
   * lost its keys (flushed, restarted empty), jobs included, so that pass re-enqueues every call
   * held by no process at once instead of after DELIVERY_SWEEP_AFTER_MS.
   */
  claimDeployment?: () => Promise<'claimed' | 'written' | 'unreachable'>;
  /** How long a finished call stays in the delivery log; null keeps calls forever. */
  retentionMs: number | null;
  /** Time between two prunings of the delivery log (the first one runs at start). */
  pruneIntervalMs: number;
  /**
   * Delete statements one pass runs at most (default 100). A larger backlog (a first pruning of
   * a big log) goes on at the next passes, so re-enqueueing lost work is never held up long.
   */
  pruneStatementsPerPass?: number;
  /**
   * Webhooks whose attempts have all failed for this long (and not edited for as long) are
   * disabled, their waiting calls ended; a webhook's delivery_policy may set its own time (null:
   * only those). Looked for once a minute at most.
   */
  disableAfterFailingMs?: number | null;
  /** Hears of each webhook disabled so (to tell every process, as a 410 does). */
  onDisabled?: (webhook: { id: string; reason: string }) => Promise<void>;
}

/** The job of a call's next attempt: a rescheduled call's is its next retry, under that retry's id. */
const jobOfCall = (call: {
  id: string;
  webhookId: string;
  status: 'pending' | 'rescheduled';
  attemptedAutoRetriesCount: number;
}): { id: string; webhookId: string; retry: number | undefined } => ({
  id: call.id,
  webhookId: call.webhookId,
  retry: call.status === 'rescheduled' ? call.attemptedAutoRetriesCount + 1 : undefined,
});

/** Time between two looks for webhooks failing too long. */
const DISABLE_CHECK_INTERVAL_MS = 60_000;

/**
 * The one sweeper (docs/architecture.md, Why it holds under faults), started once per delivery process by
 * startDelivery: re-enqueues what Redis lost or never got — events stored but not matched, calls
 * still pending well after they were enqueued, and calls rescheduled whose retry is overdue — and
 * takes over the calls held by a delivery process whose lease ran out (it died). Calls held by a
 * live process are never touched, however long they wait there. Job ids are derived from the
 * rows, so re-adding a job that still exists is a no-op; several delivery processes may sweep at
 * once. It also prunes the delivery log: finished calls older than the retention are deleted, in
 * batches, every pruneIntervalMs.
 */
export class Sweeper {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  /** When the next pruning is due (0: at the next pass, as at start or after a capped one). */
  #pruneDueAt = 0;
  #disableDueAt = 0;
  readonly #metrics: DeliveryMetrics;

  constructor(private readonly options: SweeperOptions) {
    this.#metrics = deliveryMetrics(options.registry);
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
      this.options.logger.warn({ err: errorMessage(error) }, message);
    const claim = await this.options.claimDeployment?.().catch((error: unknown) => {
      this.options.logger.error({ err: errorMessage(error) }, 'deployment claim failed');
      return undefined;
    });
    if (claim === 'written') this.options.logger.info('Redis had lost its keys: re-enqueueing all');
    await this.sweep({ redisLost: claim === 'written' }).catch((error: unknown) =>
      warn(error, 'sweep failed; will retry'),
    );
    if (Date.now() >= this.#disableDueAt) {
      this.#disableDueAt = Date.now() + DISABLE_CHECK_INTERVAL_MS;
      await this.disableFailing().catch((error: unknown) =>
        warn(error, 'looking for webhooks failing too long failed; will retry'),
      );
      await this.releaseStuckLanes().catch((error: unknown) =>
        warn(error, 'looking for stuck lanes failed; will retry'),
      );
    }
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
   * Flow control's guard: a lane whose first unfinished call is parked, with nothing before it,
   * would wait for good; its call is released and enqueued (releaseStuckFlowCalls). No path is
   * known to leave one; returns how many, and logs them, so that one would be seen.
   */
  async releaseStuckLanes(): Promise<number> {
    const { db, deliverQueue, batchSize } = this.options;
    const released = await releaseStuckFlowCalls(db, batchSize);
    if (released.length === 0) return 0;
    await enqueueDueCalls(deliverQueue, released, true);
    this.options.logger.warn(
      { calls: released.length },
      'released lane calls parked with nothing before them',
    );
    return released.length;
  }

  /** Disables the webhooks whose attempts have all failed too long; returns them. */
  async disableFailing(): Promise<{ id: string; reason: string }[]> {
    const { disableAfterFailingMs = null, db, logger } = this.options;
    // Without a default, the webhooks whose policy sets a time still are.
    const disabled = await disableFailingWebhooks(db, disableAfterFailingMs);
    for (const webhook of disabled) {
      logger.warn({ webhookId: webhook.id, reason: webhook.reason }, 'webhook disabled: failing');
      await this.options.onDisabled?.(webhook);
    }
    return disabled;
  }

  /**
   * Keeps the delivery log's months: makes this month's partition and the next two, and past the
   * retention drops each month whose every day is older than it (docs/architecture.md, The
   * delivery log by month). A month still holding a pending or rescheduled call stays, and its
   * finished calls are deleted a batch per statement until none is left, the sweeper stops, or
   * pruneStatementsPerPass statements have run (the next pass goes on). Returns how many calls
   * went.
   */
  async prune(): Promise<number> {
    const { db, retentionMs, batchSize, pruneStatementsPerPass = 100 } = this.options;
    await createWebhookCallMonths(db);
    // The stats' buckets past their keeping: few rows (one per webhook and minute or hour).
    await deleteOldWebhookStats(db, retentionMs);
    if (retentionMs === null) return 0;
    const before = new Date(Date.now() - retentionMs);
    const dropped = await dropWebhookCallMonths(db, before);
    this.#metrics.logPruned.inc(dropped.calls);
    let total = dropped.calls;
    // What a whole month could not take: the months before the retention's.
    const monthsBefore = monthStart(before);
    for (let statements = 0; !this.#stopped; statements++) {
      if (statements === pruneStatementsPerPass) {
        this.#pruneDueAt = 0; // calls left: the next pass goes on
        break;
      }
      const deleted = await deleteFinishedWebhookCalls(db, monthsBefore, batchSize);
      this.#metrics.logPruned.inc(deleted);
      total += deleted;
      if (deleted < batchSize) break;
    }
    if (total > 0) {
      this.options.logger.info({ calls: total, months: dropped.months }, 'delivery log pruned');
    }
    return total;
  }

  /**
   * One pass; returns how many events went into new match jobs, how many calls of dead processes
   * were taken over and how many other calls were re-enqueued.
   */
  async sweep({ redisLost = false } = {}): Promise<{
    events: number;
    orphans: number;
    calls: number;
  }> {
    const { db } = this.options;
    // Jobs still in Redis make the re-adds no-ops; when Redis lost them, nothing waits (a match
    // repeated for an event some request is enqueuing right now makes nothing twice).
    const afterMs = redisLost ? 0 : this.options.afterMs;
    const limit = this.options.batchSize;
    const { added: events, queued } = await sweepUnmatchedEvents({
      db,
      queue: this.options.matchQueue,
      registry: this.options.registry,
      graceMs: redisLost ? 0 : this.options.eventGraceMs,
      batchSize: limit,
      enqueueTimeoutMs: this.options.enqueueTimeoutMs,
    });
    const orphans = await this.#takeOverOrphans();
    const now = new Date();
    let calls = await this.#sweepStrandedCalls(
      new Date(now.getTime() - afterMs),
      redisLost ? 'redis_lost' : 'stranded',
    );
    // Redis lost the delayed jobs too: the calls waiting for a time still ahead get theirs back.
    if (redisLost) calls += await this.#sweepWaitingCalls();
    if (events + orphans + calls > 0) {
      this.options.logger.info(
        { events, eventsStillQueued: queued, orphans, calls },
        'sweeper re-enqueued work',
      );
    }
    return { events, orphans, calls };
  }

  /**
   * Enqueues the pending calls of processes whose lease ran out, page after page, and hands them
   * over (their hold ends); then forgets the leases that hold nothing. Returns how many.
   */
  async #takeOverOrphans(): Promise<number> {
    const { db, deliverQueue, batchSize: limit, leaseMs } = this.options;
    if (this.options.healthyForMs() < leaseMs) return 0;
    let total = 0;
    for (;;) {
      const orphans = await listOrphanedWebhookCalls(db, {
        leaseMs,
        limit,
        ...(this.options.leaseId ? { self: this.options.leaseId } : {}),
      });
      await enqueueDeliveries(deliverQueue, orphans);
      await markWebhookCallsEnqueued(
        db,
        orphans.map((c) => c.id),
      );
      this.#metrics.sweptCalls.inc({ reason: 'orphaned' }, orphans.length);
      total += orphans.length;
      if (orphans.length < limit || this.#stopped) break;
    }
    await deleteExpiredLeases(db, leaseMs);
    return total;
  }

  /**
   * After Redis lost its keys: a job delayed to its time for each call waiting for a time still
   * ahead (a retry, a batch's window, an attempt put off), page after page. Their clocks stay: a
   * retry is still listed as stranded if it is overdue later. Returns how many.
   */
  async #sweepWaitingCalls(): Promise<number> {
    const { db, deliverQueue, batchSize: limit } = this.options;
    let total = 0;
    let after: { cursor: string; id: string } | null = null;
    for (;;) {
      const waiting = await listWaitingWebhookCalls(db, { after, limit });
      const now = Date.now();
      let next = 0;
      await enqueueDeliveries(deliverQueue, waiting.map(jobOfCall), () =>
        Math.max(0, waiting[next++]!.dueAt.getTime() - now),
      );
      this.#metrics.sweptCalls.inc({ reason: 'redis_lost' }, waiting.length);
      total += waiting.length;
      const last = waiting.at(-1);
      if (!last || waiting.length < limit || this.#stopped) return total;
      after = { cursor: last.cursor, id: last.id };
    }
  }

  /**
   * Re-enqueues the calls whose job Redis may have lost (pending past the job lock, or
   * rescheduled and overdue), page after page until none is left: a whole backlog in one pass
   * after a FLUSHALL, not one page per interval. Returns how many.
   */
  async #sweepStrandedCalls(before: Date, reason: 'stranded' | 'redis_lost'): Promise<number> {
    const { db, deliverQueue, batchSize: limit } = this.options;
    let total = 0;
    for (;;) {
      const stranded = await listStrandedWebhookCalls(db, { before, limit });
      await enqueueDeliveries(deliverQueue, stranded.map(jobOfCall));
      // Restarts their clocks: they leave the list, and come back only if still not done later.
      await markWebhookCallsEnqueued(
        db,
        stranded.map((c) => c.id),
      );
      this.#metrics.sweptCalls.inc({ reason }, stranded.length);
      total += stranded.length;
      if (stranded.length < limit || this.#stopped) return total;
    }
  }
}

/** Starts the process's one sweeper, on the service's settings. */
export function startSweeper(
  resources: Pick<
    SystemResources,
    'db' | 'coordination' | 'matchQueue' | 'deliverQueue' | 'logger' | 'lease' | 'announce'
  > & { registry: Registry },
  settings: Pick<
    DeliverySettings,
    | 'sweepIntervalMs'
    | 'sweepAfterMs'
    | 'eventSweepGraceMs'
    | 'sweepBatchSize'
    | 'sweepEnqueueTimeoutMs'
    | 'logRetentionMs'
    | 'logPruneIntervalMs'
    | 'leaseMs'
    | 'disableAfterFailingMs'
  >,
): Sweeper {
  const { db, coordination, lease, announce } = resources;
  const sweeper = new Sweeper({
    db,
    matchQueue: resources.matchQueue,
    deliverQueue: resources.deliverQueue,
    logger: resources.logger.child({ module: 'sweeper' }),
    registry: resources.registry,
    intervalMs: settings.sweepIntervalMs,
    afterMs: settings.sweepAfterMs,
    eventGraceMs: settings.eventSweepGraceMs,
    batchSize: settings.sweepBatchSize,
    enqueueTimeoutMs: settings.sweepEnqueueTimeoutMs,
    retentionMs: settings.logRetentionMs,
    pruneIntervalMs: settings.logPruneIntervalMs,
    leaseMs: settings.leaseMs,
    healthyForMs: () => lease.healthyForMs(),
    leaseId: lease.id,
    // Redis forgets the claim when it is flushed or restarted empty: write it again.
    claimDeployment: () => coordination.claimDeployment(db),
    disableAfterFailingMs: settings.disableAfterFailingMs,
    onDisabled: (webhook) => announce({ id: webhook.id, change: 'updated' }),
  });
  sweeper.start();
  return sweeper;
}
