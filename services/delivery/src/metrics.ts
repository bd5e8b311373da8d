import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ATTEMPT_TRIGGERS } from '@herald/contract';
import type { DeliverQueue, EventMatchQueue } from '@herald/runtime';
import { readDeliveryHealth, type Db } from '@herald/store';

/** What an attempt came to by itself, whatever its call's status became. */
const ATTEMPT_RESULTS = ['success', 'failure'] as const;

/** Why the sweeper enqueued a call again (herald_sweeper_calls_enqueued_total). */
const SWEPT_CALL_REASONS = ['stranded', 'orphaned', 'redis_lost'] as const;

/**
 * Delivery metrics (docs/api.md, Operations). Labels are bounded: outcome (success, rescheduled,
 * failed), status_class (2xx…5xx, timeout, reset, dns, refused, blocked, error), trigger (first,
 * retry, resend, bulk_resend, replay, test), result (success, failure) and the queue name.
 */
export interface DeliveryMetrics {
  /** Attempts by the status their call was left in (success, rescheduled, failed). */
  deliveries: Counter<'outcome' | 'status_class'>;
  /** Attempts by their own result, apart from what became of their call. */
  attempts: Counter<'trigger' | 'result'>;
  deliveryDuration: Histogram<'status_class'>;
  /** Event accepted to a 2xx answer, by the attempt that got it (first: no retry needed). */
  endToEndLatency: Histogram<'trigger'>;
  matchDuration: Histogram;
  inFlight: Gauge;
  firstAttemptsQueued: Gauge;
  /** Match-job events not found in this database (see the match worker). */
  eventsMissing: Counter;
  /** Events this process's ingest handed to its own match workers, in memory (no match job). */
  eventsMatchedLocally: Counter;
  /** Jobs put off because the database was away (no attempt spent), by queue. */
  jobsWaitingForDatabase: Counter<'queue'>;
  /** Jobs put off for the database that its return brought back before their own wait ended. */
  jobsResumedAfterDatabase: Counter;
  /** Calls held by this process in Postgres but not in its memory, released to the sweeper. */
  heldCallsReleased: Counter;
  /** Webhooks whose circuit is not closed (open, or waiting for its probe's outcome). */
  circuitsOpen: Gauge;
  /** Attempts put off by their webhook's rate limit or open circuit, by path and reason. */
  putOff: Counter<'path' | 'reason'>;
  /**
   * Flow control: events placed in lanes, by placement (own: a call of its own that goes now;
   * parked: behind an earlier call; batched: a new batch waiting for its window; joined: into a
   * call still waiting; superseded: too late, not sent).
   */
  flowEvents: Counter<'placement'>;
  /** Flow control: attempts' claims of lane calls, by what they said (go, parked, window, busy, done, free). */
  flowClaims: Counter<'state'>;
  /** Notices stored (entity type notice). */
  notices: Counter;
  /** Items of bulk jobs finished, by outcome (succeeded, failed, skipped). */
  bulkItems: Counter<'outcome'>;
  /** Stored but unmatched events the sweeper enqueued again. */
  sweptEvents: Counter;
  /** Calls the sweeper enqueued again, by reason (SWEPT_CALL_REASONS). */
  sweptCalls: Counter<'reason'>;
  /** Finished calls pruned from the delivery log. */
  logPruned: Counter;
  queueDepth: Gauge<'queue'>;
  queueOldestWaiting: Gauge<'queue'>;
  /** Reads the queue gauges from Redis; set by the workers, run when /metrics is scraped. */
  collectQueues?: () => Promise<void>;
  /** Enabled webhooks whose every attempt since their last success failed. */
  webhooksFailing: Gauge;
  /** How long the longest of those runs of failures has lasted. */
  webhookFailingLongest: Gauge;
  /** How long the endpoint of the longest-open circuit has gone unreached. */
  circuitOpenLongest: Gauge;
  /** Reads the three webhook health gauges from Postgres; set by the workers, run on a scrape. */
  collectHealth?: () => Promise<void>;
}

/** One read for every gauge it fills: concurrent scrapes share it. */
function sharedCollect(read: () => Promise<void> | undefined): () => Promise<void> {
  let collecting: Promise<void> | undefined;
  return async () => {
    collecting ??= (read() ?? Promise.resolve()).finally(() => {
      collecting = undefined;
    });
    await collecting;
  };
}

const cache = new WeakMap<Registry, DeliveryMetrics>();

/** Registered once per registry (the single-process mode shares one registry). */
export function deliveryMetrics(registry: Registry): DeliveryMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const collect = sharedCollect(() => metrics.collectQueues?.());
  const collectHealth = sharedCollect(() => metrics.collectHealth?.());
  const metrics: DeliveryMetrics = {
    deliveries: new Counter({
      name: 'herald_deliveries_total',
      help: 'Delivery attempts by the call status they led to and the response status class',
      labelNames: ['outcome', 'status_class'] as const,
      registers,
    }),
    attempts: new Counter({
      name: 'herald_attempts_total',
      help: 'Delivery attempts by trigger (first, retry, resend, bulk_resend, replay, test) and result (success, failure), apart from what became of their call',
      labelNames: ['trigger', 'result'] as const,
      registers,
    }),
    deliveryDuration: new Histogram({
      name: 'herald_delivery_duration_seconds',
      help: 'Duration of one delivery attempt (connect to response body read)',
      labelNames: ['status_class'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16],
      registers,
    }),
    endToEndLatency: new Histogram({
      name: 'herald_delivery_e2e_latency_seconds',
      help: 'From the event accepted by POST /events to its 2xx answer from a webhook, by the trigger of the attempt that got it (first: no retry was needed)',
      labelNames: ['trigger'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
      registers,
    }),
    matchDuration: new Histogram({
      name: 'herald_match_duration_seconds',
      help: 'Matching one event against the in-memory webhook index (excluding storage)',
      buckets: [0.000_005, 0.00001, 0.000_025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005],
      registers,
    }),
    inFlight: new Gauge({
      name: 'herald_deliveries_in_flight',
      help: 'Delivery attempts in flight in this process',
      registers,
    }),
    firstAttemptsQueued: new Gauge({
      name: 'herald_first_attempts_queued',
      help: 'New calls matched in this process and waiting for a slot of its pool',
      registers,
    }),
    eventsMissing: new Counter({
      name: 'herald_match_events_missing_total',
      help: 'Event ids of match jobs not found in this database (the job is retried, then fails)',
      registers,
    }),
    eventsMatchedLocally: new Counter({
      name: 'herald_events_matched_locally_total',
      help: 'Events the ingest of this process handed to its own match workers in memory, without a match job',
      registers,
    }),
    jobsWaitingForDatabase: new Counter({
      name: 'herald_jobs_waiting_for_database_total',
      help: 'Jobs put off because Postgres was unreachable, without spending an attempt',
      labelNames: ['queue'] as const,
      registers,
    }),
    jobsResumedAfterDatabase: new Counter({
      name: 'herald_jobs_resumed_after_database_total',
      help: 'Jobs put off because Postgres was unreachable, brought back as soon as it answered',
      registers,
    }),
    heldCallsReleased: new Counter({
      name: 'herald_held_calls_released_total',
      help:
        'Calls Postgres said this process held that it no longer had in memory (an outcome a ' +
        'Postgres crash forgot, or a reply lost), released for the sweeper to send again',
      registers,
    }),
    circuitsOpen: new Gauge({
      name: 'herald_circuits_open',
      help: "Webhooks whose circuit breaker is open or waiting for its probe's outcome",
      registers,
    }),
    notices: new Counter({
      name: 'herald_notices_total',
      help: 'Notices Herald stored about itself (a webhook failing, recovered, circuit opened, disabled; a bulk job ended)',
      registers,
    }),
    bulkItems: new Counter({
      name: 'herald_bulk_job_items_total',
      help: 'Items of bulk jobs (bulk resends, replays) finished, by outcome: succeeded, failed, or skipped (not sent)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    putOff: new Counter({
      name: 'herald_attempts_put_off_total',
      help: "Attempts put off by their webhook's rate limit or open circuit (path: first attempt, deliver job or bulk job)",
      labelNames: ['path', 'reason'] as const,
      registers,
    }),
    flowEvents: new Counter({
      name: 'herald_flow_events_total',
      help: 'Events placed in the lanes of webhooks with flow control, by placement: own, parked, batched, joined (a waiting call), superseded (not sent)',
      labelNames: ['placement'] as const,
      registers,
    }),
    flowClaims: new Counter({
      name: 'herald_flow_claims_total',
      help: 'Claims of lane calls by their attempts, by answer: go, parked (an earlier call is unfinished), window (batch still open), busy (another attempt holds it), done, free (in no lane)',
      labelNames: ['state'] as const,
      registers,
    }),
    sweptEvents: new Counter({
      name: 'herald_sweeper_events_enqueued_total',
      help: 'Stored but unmatched events the sweeper (re-)enqueued on event-match',
      registers,
    }),
    sweptCalls: new Counter({
      name: 'herald_sweeper_calls_enqueued_total',
      help: 'Calls the sweeper enqueued again, by reason: stranded (pending or overdue past DELIVERY_SWEEP_AFTER_MS), orphaned (held by a process whose lease ran out), redis_lost (Redis had lost its keys)',
      labelNames: ['reason'] as const,
      registers,
    }),
    logPruned: new Counter({
      name: 'herald_delivery_log_pruned_total',
      help: 'Finished webhook calls removed from the delivery log past DELIVERY_LOG_RETENTION_DAYS (months dropped, or rows deleted)',
      registers,
    }),
    webhooksFailing: new Gauge({
      name: 'herald_webhooks_failing',
      help: 'Enabled webhooks whose every attempt since their last success has failed (read from Postgres)',
      registers,
      collect: collectHealth,
    }),
    webhookFailingLongest: new Gauge({
      name: 'herald_webhook_failing_longest_seconds',
      help: 'How long the enabled webhook failing longest has had every attempt fail (since its last success); 0 when none fails',
      registers,
      collect: collectHealth,
    }),
    circuitOpenLongest: new Gauge({
      name: 'herald_circuit_open_longest_seconds',
      help: 'How long the endpoint of the longest-open circuit has gone unreached (since an attempt last reached it); 0 when every circuit is closed',
      registers,
      collect: collectHealth,
    }),
    queueDepth: new Gauge({
      name: 'herald_queue_depth',
      help: 'Jobs waiting, delayed or active per queue',
      labelNames: ['queue'] as const,
      registers,
      collect,
    }),
    queueOldestWaiting: new Gauge({
      name: 'herald_queue_oldest_waiting_seconds',
      help: 'Age of the oldest job waiting to be processed per queue',
      labelNames: ['queue'] as const,
      registers,
      collect,
    }),
  };
  // Every label value known in advance has a series from the start, so that rates and sums see
  // the first increments and alert expressions over them are never empty.
  for (const trigger of ATTEMPT_TRIGGERS) {
    for (const result of ATTEMPT_RESULTS) metrics.attempts.inc({ trigger, result }, 0);
  }
  for (const reason of SWEPT_CALL_REASONS) metrics.sweptCalls.inc({ reason }, 0);
  cache.set(registry, metrics);
  return metrics;
}

/** Queue depth and oldest waiting age, read from the queues' store when /metrics is scraped. */
export function queueCollector(
  metrics: Pick<DeliveryMetrics, 'queueDepth' | 'queueOldestWaiting'>,
  queues: readonly (EventMatchQueue | DeliverQueue)[],
): () => Promise<void> {
  return async () => {
    await Promise.all(
      queues.map(async (queue) => {
        const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
        const depth = Object.values(counts).reduce((a, b) => a + b, 0);
        metrics.queueDepth.set({ queue: queue.name }, depth);
        const [oldest] = await queue.getJobs(['waiting'], 0, 0, true);
        const since = oldest ? oldest.timestamp + (oldest.opts.delay ?? 0) : Date.now();
        metrics.queueOldestWaiting.set(
          { queue: queue.name },
          Math.max(0, Date.now() - since) / 1000,
        );
      }),
    ).catch(() => undefined);
  };
}

/**
 * The webhooks' health the alerts watch, read from Postgres when /metrics is scraped; given up
 * after 2 s (the gauges keep their last values), so that a Postgres away does not fail the
 * scrape (herald_dependency_up says it is away).
 */
export function healthCollector(
  metrics: Pick<
    DeliveryMetrics,
    'webhooksFailing' | 'webhookFailingLongest' | 'circuitOpenLongest'
  >,
  db: Db,
): () => Promise<void> {
  return async () => {
    let timer: NodeJS.Timeout | undefined;
    const health = await Promise.race([
      readDeliveryHealth(db),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 2000))),
    ])
      .catch(() => undefined)
      .finally(() => clearTimeout(timer));
    if (!health) return;
    metrics.webhooksFailing.set(health.failing);
    metrics.webhookFailingLongest.set(health.failingLongestSeconds);
    metrics.circuitOpenLongest.set(health.circuitOpenLongestSeconds);
  };
}
