import type { Job } from 'bullmq';
import {
  QUEUE_EVENT_MATCH,
  QUEUE_WEBHOOK_DELIVER,
  webhooksChangedChannel,
  type CidrList,
  type DeliverJobData,
  type EventMatchJobData,
  type WebhookChangedMessage,
  errorMessage,
} from '@herald/contract';
import {
  createDeliverQueue,
  createEventMatchQueue,
  createQueueWorker,
  connectRedis,
  enqueueDueCalls,
  postgresProblem,
  redisProblem,
  warnOncePerCause,
  type Coordination,
  type DeliverQueue,
  type EventMatchQueue,
  type Logger,
  type MatchJobRetries,
} from '@herald/runtime';
import {
  findWebhook,
  listEnabledWebhooks,
  readDeliveryHealth,
  type CircuitSettings,
  type Db,
  type ReleasedLaneCall,
} from '@herald/store';
import type { Registry } from 'prom-client';
import { Circuits } from './delivery/circuits.js';
import { AttemptRollups } from './delivery/rollups.js';
import { HttpClient } from './delivery/http-client.js';
import { deliveryCoordination } from './delivery/coordination.js';
import { Lease } from './delivery/lease.js';
import { deliveryLoaders } from './delivery/loaders.js';
import { deliveryMetrics, type DeliveryMetrics } from './delivery/metrics.js';
import type { RetryPolicy } from './delivery/schedule.js';
import { Semaphore } from './delivery/semaphore.js';
import {
  attemptForJob,
  createFirstAttempts,
  deliverWebhook,
  type DeliverContext,
  type NewCall,
} from './jobs/deliver-webhook.js';
import { matchEvent, type MatchContext } from './jobs/match-event.js';
import { BulkJobs } from './bulk-jobs.js';
import { Notices } from './notices.js';
import { Sweeper } from './sweeper.js';
import { WebhookIndex } from './webhook-index.js';

/** Everything the delivery workers need, parsed from DeliveryConfig by main.ts. */
/** How often a delivery process writes its attempts' stats rollups (AttemptRollups). */
const ROLLUP_INTERVAL_MS = 250;

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

/** Starts the match and deliver workers, the index refresh and the (one) sweeper. */
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
  const index = new WebhookIndex();
  const reload = async (): Promise<void> => {
    index.replaceAll(await listEnabledWebhooks(db));
  };
  await reload();
  const channel = webhooksChangedChannel(coordination.prefix);
  const onAnnounced = (text: string): void => {
    let message: WebhookChangedMessage;
    try {
      message = JSON.parse(text) as WebhookChangedMessage;
    } catch {
      return;
    }
    findWebhook(db, message.id)
      .then((webhook) => index.upsert(message.id, webhook))
      .catch((error: unknown) =>
        logger.warn({ err: errorMessage(error) }, 'webhook index refresh failed'),
      );
  };
  // After a reconnect, announcements may have been missed: reload everything.
  const subscription = await coordination.subscribe(channel, onAnnounced, () => {
    reload().catch(() => undefined);
  });
  const reloadTimer = setInterval(() => {
    reload().catch((error: unknown) =>
      logger.warn({ err: errorMessage(error) }, 'webhook index reload failed'),
    );
  }, settings.indexReloadMs);

  const client = new HttpClient({
    connectTimeoutMs: settings.connectTimeoutMs,
    totalTimeoutMs: settings.timeoutMs,
    allowCidrs: settings.allowCidrs,
    maxResponseBytes: settings.responseMaxBytes,
    connectionsPerOrigin: settings.connectionsPerOrigin,
  });
  const { inFlight: limiter, rateTurns } = deliveryCoordination(coordination, {
    maxInFlightPerWebhook: settings.maxInFlightPerWebhook,
    // A dead process's slots come free a second after its longest attempt could have ended.
    slotTtlMs: settings.timeoutMs + 1000,
  });

  // The calls this process will make first attempts of are held by its lease (taken first: a
  // process that cannot write to Postgres does not start).
  const lease = new Lease(db, logger.child({ module: 'lease' }), settings.leaseMs, (count) =>
    metrics.heldCallsReleased.inc(count),
  );
  await lease.start();
  let closing = false;

  const circuits = new Circuits({
    db,
    logger: logger.child({ module: 'circuits' }),
    pollMs: Math.min(1000, Math.max(100, settings.circuit.cooldownMs / 4)),
    // An attempt lasts at most the timeout: a claim older than twice that is a dead process's.
    probeTimeoutMs: 2 * settings.timeoutMs + 1000,
    probeWaitMs: Math.min(1000, Math.max(100, settings.circuit.cooldownMs / 4)),
    openGauge: metrics.circuitsOpen,
  });
  await circuits.start();
  // Stats, health and circuits follow the outcomes within a quarter second (a failure that
  // counts towards a circuit at once), and this process's circuits follow its rollups.
  const rollups = new AttemptRollups(
    db,
    logger.child({ module: 'rollups' }),
    settings.circuit,
    ROLLUP_INTERVAL_MS,
    (written) => circuits.heard(written),
  );
  rollups.start();
  const loaders = deliveryLoaders(db, rollups, {
    holder: lease.id,
    hold: (statement) => lease.create(statement),
    onReleased: (calls) => startReleased(calls),
  });
  const deliverContext: DeliverContext = {
    db,
    loaders,
    client,
    limiter,
    semaphore: new Semaphore(settings.deliverConcurrency),
    deliverQueue,
    metrics,
    logger: logger.child({ module: 'deliver' }),
    siteId: settings.siteId,
    userAgent: settings.userAgent,
    retry: settings.retry,
    inFlightWaitMs: Math.min(1000, Math.max(100, settings.timeoutMs / 8)),
    lease,
    circuits,
    rateLimiter: rateTurns,
    isWebhookEnabled: (webhookId) => index.has(webhookId),
    announce: async (message) => {
      // Postgres holds the change; a lost announcement is caught up by the periodic reload.
      await coordination.publish(channel, JSON.stringify(message)).catch((error: unknown) => {
        logger.warn({ err: errorMessage(error) }, 'could not announce a webhook change');
      });
    },
    closing: () => closing,
    // An attempt lasts at most the timeout: a claim older than twice that is a dead process's.
    claimBusyMs: 2 * settings.timeoutMs + 1000,
  };
  const firstAttempts = createFirstAttempts(deliverContext);
  /**
   * Lane calls an outcome released (flow control): those due now are attempted here, as first
   * attempts are (held by this process's lease, waiting here for their webhook's slot); a batch
   * whose window is still open gets a job due when it ends.
   */
  const startReleased = async (calls: readonly ReleasedLaneCall[]): Promise<void> => {
    const now = Date.now();
    const later = calls.filter((call) => call.dueAt !== null && call.dueAt.getTime() > now);
    lease.letGo(later.map((call) => call.id));
    await enqueueDueCalls(deliverQueue, later, true);
    const due = calls.filter((call) => !later.includes(call));
    if (due.length === 0) return;
    try {
      const loaded = await Promise.all(
        // A released call is pending (parked calls were never attempted): its event and webhook
        // are what its attempt reads.
        due.map(async (released): Promise<NewCall | null> => {
          const { id, webhookId, eventId } = released;
          const [webhook, event] = await Promise.all([
            loaders.webhooks.load(webhookId),
            loaders.events.load(eventId),
          ]);
          if (!event) return null;
          const claimed = released.claimed ? released.eventIds : null;
          return { id, webhookId, event, webhook: webhook ?? null, placed: true, claimed };
        }),
      );
      const started = loaded.filter((call): call is NewCall => call !== null);
      const skipped = due.filter((call) => !started.some((s) => s.id === call.id));
      lease.letGo(skipped.map((call) => call.id));
      await lease.release(
        skipped.map((call) => call.id),
        true,
      );
      firstAttempts.add(started);
    } catch (error) {
      logger.warn(
        { err: errorMessage(error) },
        'released lane calls not started here; the sweeper will',
      );
      const ids = due.map((call) => call.id);
      lease.letGo(ids);
      await lease.release(ids, true);
    }
  };
  const matchContext: MatchContext = {
    db,
    index,
    models: loaders.models,
    metrics,
    logger: logger.child({ module: 'match' }),
    startAttempts: (calls) => firstAttempts.add(calls),
    // Matching waits while this process has twice its pool of first attempts queued or in flight.
    roomForAttempts: () => firstAttempts.below(2 * settings.deliverConcurrency),
    lease,
    enqueueDue: (calls) => enqueueDueCalls(deliverQueue, calls, false),
  };

  // On Redis the workers block on a connection of their own (the worker role).
  const workerConnection =
    coordination.kind === 'redis' ? connectRedis(coordination.target, 'worker', logger) : undefined;
  const workerOptions = {
    // The lock is renewed every half of it while the worker lives; checking for stalled jobs
    // every half too brings a dead worker's jobs back within ~1.5 locks, not 2.
    lockDuration: settings.jobLockMs,
    stalledInterval: Math.max(500, Math.floor(settings.jobLockMs / 2)),
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 0 },
  };
  const matchWorker = createQueueWorker<EventMatchJobData>(
    QUEUE_EVENT_MATCH,
    coordination,
    async (job: Job<EventMatchJobData>, token?: string) =>
      matchEvent.handler(matchContext, matchEvent.schema.parse(job.data), job, token),
    { ...workerOptions, concurrency: settings.matchConcurrency },
    workerConnection,
  );
  // Deliver jobs are retries, resends, calls that waited for their webhook's in-flight limit and
  // the sweeper's re-adds; first attempts start from the match worker. The semaphore
  // (DELIVERY_CONCURRENCY) counts the attempts in flight, wherever they come from.
  const deliverWorker = createQueueWorker<DeliverJobData>(
    QUEUE_WEBHOOK_DELIVER,
    coordination,
    async (job: Job<DeliverJobData>, token?: string) =>
      deliverWebhook.handler(deliverContext, deliverWebhook.schema.parse(job.data), job, token),
    { ...workerOptions, concurrency: settings.deliverConcurrency },
    workerConnection,
  );
  for (const worker of [matchWorker, deliverWorker]) {
    worker.on('error', (error) =>
      warnOncePerCause(
        logger,
        workerConnection ? redisProblem(workerConnection, error) : postgresProblem(error),
        {
          err: errorMessage(error),
          queue: worker.name,
        },
      ),
    );
    worker.on('failed', (job, error) => {
      logger.warn({ err: errorMessage(error), queue: worker.name, jobId: job?.id }, 'job failed');
    });
  }

  // Queue depth and oldest waiting age, read from the queues' store when /metrics is scraped.
  const queues = [matchQueue, deliverQueue];
  const collectQueues = async (): Promise<void> => {
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
  metrics.collectQueues = collectQueues;
  // The webhooks' health the alerts watch, read from Postgres when /metrics is scraped; given up
  // after 2 s (the gauges keep their last values), so that a Postgres away does not fail the
  // scrape (herald_dependency_up says it is away).
  metrics.collectHealth = async (): Promise<void> => {
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
    onDisabled: (webhook) => deliverContext.announce({ id: webhook.id, change: 'updated' }),
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
      attemptForJob(deliverContext, item, { ...gate, stopping: () => closing || gate.stopping() }),
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
      clearInterval(reloadTimer);
      await sweeper.stop();
      // Running bulk jobs stop after their batch; they stay held and are taken over later.
      await bulkJobs.stop();
      await notices.stop();
      // Worker.close() stops fetching and waits for the jobs in flight (bounded by the timeout),
      // then the first attempts the match worker started finish too.
      await Promise.all([matchWorker.close(), deliverWorker.close()]);
      await firstAttempts.drain();
      await lease.stop();
      await circuits.stop();
      await rollups.stop();
      await Promise.all([matchQueue.close(), deliverQueue.close()]);
      await client.close();
      await subscription.close();
      await workerConnection?.quit().catch(() => workerConnection.disconnect());
    },
  };
}
