import type { Job } from 'bullmq';
import type { CidrList, DeliverJobData, EventMatchJobData } from '@herald/contract';
import {
  createDeliverQueue,
  createEventMatchQueue,
  type Coordination,
  type DeliverQueue,
  type EventMatchQueue,
  type Logger,
  type MatchJobRetries,
} from '@herald/runtime';
import type { CircuitSettings, Db } from '@herald/store';
import type { Registry } from 'prom-client';
import { deliverWebhook } from './jobs/deliver-webhook.js';
import { matchEvent } from './jobs/match-event.js';
import {
  deliveryMetrics,
  healthCollector,
  queueCollector,
  type DeliveryMetrics,
} from './metrics.js';
import { startQueueWorkers } from './queue-workers.js';
import { deliveryLoaders } from './shared/loaders.js';
import { Attempts } from './systems/attempt/attempt.js';
import { Deliveries } from './systems/attempt/deliveries.js';
import { HttpClient } from './systems/attempt/http-client.js';
import { OutcomeRecorder } from './systems/attempt/record-outcomes.js';
import type { RetryPolicy } from './systems/attempt/schedule.js';
import { BulkJobs } from './systems/background/bulk-jobs.js';
import { Notices } from './systems/background/notices.js';
import { Lanes } from './systems/flow/lanes.js';
import { startLimits } from './systems/limits/limits.js';
import { WebhookIndexSync } from './systems/match/index-sync.js';
import { Matcher } from './systems/match/match.js';
import type { WebhookIndex } from './systems/match/webhook-index.js';
import { Lease } from './systems/recovery/lease.js';
import { Sweeper } from './systems/recovery/sweeper.js';

/** Everything the delivery workers need, parsed from DeliveryConfig by main.ts. */
export interface DeliverySettings {
  siteId: string;
  userAgent: string;
  allowCidrs: CidrList;
  connectTimeoutMs: number;
  timeoutMs: number;
  connectionsPerOrigin: number;
  responseMaxBytes: number;
  retry: RetryPolicy;
  maxInFlightPerWebhook: number;
  /** The circuit breaker (failures 0: off). */
  circuit: CircuitSettings;
  /** Disable a webhook whose attempts have all failed this long (null: never). */
  disableAfterFailingMs: number | null;
  /** Failed attempts in a row that make a webhook "failing" in a notice (0: never). */
  noticeFailures: number;
  /** How often the process looks for notices to emit. */
  noticePollMs: number;
  /** Bulk jobs this process runs at once (0: none), and how often it looks for one. */
  bulkJobsPerProcess: number;
  bulkJobsPollMs: number;
  deliverConcurrency: number;
  matchConcurrency: number;
  /** The match job's retry budget (also ingest's, which enqueues most match jobs). */
  matchRetries: MatchJobRetries;
  /** BullMQ's job lock; a dead worker's jobs run again within about 1.5 times this. */
  jobLockMs: number;
  /** How long this process's hold on its queued first attempts outlives its last heartbeat. */
  leaseMs: number;
  sweepIntervalMs: number;
  sweepAfterMs: number;
  /** Unmatched events younger than this are left to the ingest request enqueuing them. */
  eventSweepGraceMs: number;
  sweepBatchSize: number;
  /** How long the sweeper's enqueue of events waits for the queues' store. */
  sweepEnqueueTimeoutMs: number;
  indexReloadMs: number;
  /** How long a finished call stays in the delivery log (null: forever). */
  logRetentionMs: number | null;
  /** Time between two prunings of the delivery log. */
  logPruneIntervalMs: number;
}

export interface DeliveryDeps {
  db: Db;
  /**
   * Redis (its producer connection, which fails fast) or Postgres alone: the queues, in-flight
   * slots, rate limits, the webhooks-changed channel and the deployment claim.
   */
  coordination: Coordination;
  logger: Logger;
  registry: Registry;
}

export interface DeliveryRuntime {
  index: WebhookIndex;
  matchQueue: EventMatchQueue;
  deliverQueue: DeliverQueue;
  sweeper: Sweeper;
  metrics: DeliveryMetrics;
  /** Stops taking jobs, lets in-flight ones finish, then closes queues and connections. */
  close(): Promise<void>;
}

/**
 * Starts the match and deliver workers, the index refresh and the (one) sweeper: the wiring of
 * the systems (systems/*), each given the few things it uses.
 */
export async function startDelivery(
  deps: DeliveryDeps,
  settings: DeliverySettings,
): Promise<DeliveryRuntime> {
  const { db, coordination, logger } = deps;
  const metrics = deliveryMetrics(deps.registry);
  // The producer side of event-match, with ingest's job options (the sweeper enqueues on it).
  const matchQueue = createEventMatchQueue(coordination, logger, settings.matchRetries);
  // Its producer side: retries, first attempts put off, the sweeper's re-adds.
  const deliverQueue = createDeliverQueue(coordination, logger);
  // The index: loaded before the match worker starts, refreshed on announcements and periodically.
  const webhooks = new WebhookIndexSync({
    db,
    coordination,
    logger,
    reloadMs: settings.indexReloadMs,
  });
  await webhooks.start();
  const { index } = webhooks;
  const announce = webhooks.announce.bind(webhooks);

  // The calls this process will make first attempts of are held by its lease (taken first: a
  // process that cannot write to Postgres does not start).
  const lease = new Lease(db, logger.child({ module: 'lease' }), settings.leaseMs, (count) =>
    metrics.heldCallsReleased.inc(count),
  );
  await lease.start();
  let closing = false;
  const limits = await startLimits({ db, coordination, metrics, logger }, settings);
  const loaders = deliveryLoaders(db);
  const deliverLogger = logger.child({ module: 'deliver' });
  const client = new HttpClient({
    connectTimeoutMs: settings.connectTimeoutMs,
    totalTimeoutMs: settings.timeoutMs,
    allowCidrs: settings.allowCidrs,
    maxResponseBytes: settings.responseMaxBytes,
    connectionsPerOrigin: settings.connectionsPerOrigin,
  });
  const outcomes = new OutcomeRecorder({ db, rollups: limits.rollups, lease });
  const { siteId, userAgent, retry } = settings;
  const attempts = new Attempts({
    db,
    client,
    outcomes,
    limits,
    deliverQueue,
    metrics,
    announce,
    models: loaders.models,
    logger: deliverLogger,
    siteId,
    userAgent,
    retry,
    closing: () => closing,
  });
  // An attempt lasts at most the timeout: a claim older than twice that is a dead process's.
  const claimBusyMs = 2 * settings.timeoutMs + 1000;
  const lanes = new Lanes({ db, loaders, lease, deliverQueue, metrics, logger, claimBusyMs });
  const isWebhookEnabled = (webhookId: string): boolean => index.has(webhookId);
  const deliveries = new Deliveries({
    db,
    loaders,
    limits,
    lanes,
    attempts,
    lease,
    deliverQueue,
    metrics,
    logger: deliverLogger,
    isWebhookEnabled,
  });
  const { firstAttempts } = deliveries;
  const matchLogger = logger.child({ module: 'match' });
  const models = loaders.models;
  const matcher = new Matcher({
    db,
    index,
    models,
    metrics,
    logger: matchLogger,
    lease,
    deliverQueue,
  });
  const matchContext = {
    db,
    matcher,
    metrics,
    lease,
    startAttempts: (calls: Parameters<typeof firstAttempts.add>[0]) => firstAttempts.add(calls),
    // Matching waits while this process has twice its pool of first attempts queued or in flight.
    roomForAttempts: () => firstAttempts.below(2 * settings.deliverConcurrency),
  };
  const workers = startQueueWorkers(coordination, logger, settings, {
    match: (job: Job<EventMatchJobData>, token?: string) =>
      matchEvent.handler(matchContext, matchEvent.schema.parse(job.data), job, token),
    deliver: (job: Job<DeliverJobData>, token?: string) =>
      deliverWebhook.handler(
        { deliveries, limits, metrics },
        deliverWebhook.schema.parse(job.data),
        job,
        token,
      ),
  });
  metrics.collectQueues = queueCollector(metrics, [matchQueue, deliverQueue]);
  metrics.collectHealth = healthCollector(metrics, db);

  const sweeper = new Sweeper({
    db,
    matchQueue,
    deliverQueue,
    logger: logger.child({ module: 'sweeper' }),
    registry: deps.registry,
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
  const bulkJobs = new BulkJobs({
    db,
    logger: logger.child({ module: 'bulk-jobs' }),
    lease,
    pollMs: settings.bulkJobsPollMs,
    maxJobs: settings.bulkJobsPerProcess,
    concurrency: settings.maxInFlightPerWebhook,
    models: loaders.models,
    attempt: (item, gate) =>
      deliveries.attemptForJob(item, { ...gate, stopping: () => closing || gate.stopping() }),
    onItems: (outcomes) => {
      for (const outcome of outcomes) metrics.bulkItems.inc({ outcome });
    },
  });
  if (settings.bulkJobsPerProcess > 0) bulkJobs.start();
  const notices = new Notices({
    db,
    matchQueue,
    logger: logger.child({ module: 'notices' }),
    failingAfter: settings.noticeFailures,
    pollMs: settings.noticePollMs,
    enqueueTimeoutMs: settings.sweepEnqueueTimeoutMs,
    emitted: metrics.notices,
  });
  notices.start();

  return {
    index,
    matchQueue,
    deliverQueue,
    sweeper,
    metrics,
    async close() {
      // Outcome writes waiting for a database that is away give up from now on: their calls stay
      // held by the lease, which runs out, and another process's sweeper takes them over.
      closing = true;
      metrics.collectQueues = undefined;
      metrics.collectHealth = undefined;
      webhooks.stopReloading();
      await sweeper.stop();
      // Running bulk jobs stop after their batch; they stay held and are taken over later.
      await bulkJobs.stop();
      await notices.stop();
      // Worker.close() stops fetching and waits for the jobs in flight (bounded by the timeout),
      // then the first attempts the match worker started finish too.
      await workers.close();
      await firstAttempts.drain();
      await lease.stop();
      await limits.stop();
      await Promise.all([matchQueue.close(), deliverQueue.close()]);
      await client.close();
      await webhooks.stop();
      await workers.disconnect();
    },
  };
}
