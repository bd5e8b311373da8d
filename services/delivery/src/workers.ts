import {
  createDeliverQueue,
  createEventMatchQueue,
  type Coordination,
  type DeliverQueue,
  type EventMatchQueue,
  runShutdownStep,
  type LocalMatchHandOff,
  type Logger,
} from '@herald/runtime';
import type { Db } from '@herald/store';
import type { Registry } from 'prom-client';
import { deliverWebhook } from './jobs/deliver-webhook.js';
import { matchEvent } from './jobs/match-event.js';
import {
  deliveryMetrics,
  healthCollector,
  queueCollector,
  type DeliveryMetrics,
} from './metrics.js';
import { processorOf, startQueueWorkers } from './queue-workers.js';
import type { DeliverySettings } from './settings.js';
import { deliveryLoaders } from './shared/loaders.js';
import { DatabaseReturns } from './shared/outage.js';
import { Attempts } from './systems/attempt/attempt.js';
import { Deliveries } from './systems/attempt/deliveries.js';
import { OutcomeRecorder } from './systems/attempt/record-outcomes.js';
import { Background } from './systems/background/background.js';
import { Lanes } from './systems/flow/lanes.js';
import { startLimits } from './systems/limits/limits.js';
import { WebhookIndexSync } from './systems/match/index-sync.js';
import { LocalMatches } from './systems/match/local-matches.js';
import { Matcher } from './systems/match/match.js';
import type { WebhookIndex } from './systems/match/webhook-index.js';
import { Lease } from './systems/recovery/lease.js';
import { startSweeper, type Sweeper } from './systems/recovery/sweeper.js';
import type { SystemResources } from './systems/resources.js';

export type { DeliverySettings };

export interface DeliveryDeps {
  db: Db;
  /**
   * Redis (its producer connection, which fails fast) or Postgres alone: the queues, in-flight
   * slots, rate limits, the webhooks-changed channel and the deployment claim.
   */
  coordination: Coordination;
  logger: Logger;
  registry: Registry;
  /**
   * The process's hand-off from its own ingest (the single process): the match workers take the
   * ids it commits in memory (LocalMatches), without a match job.
   */
  localMatch?: LocalMatchHandOff;
}

export interface DeliveryRuntime {
  index: WebhookIndex;
  matchQueue: EventMatchQueue;
  deliverQueue: DeliverQueue;
  sweeper: Sweeper;
  metrics: DeliveryMetrics;
  /** Stops taking jobs, lets in-flight ones finish, then closes queues and connections. */
  close(): Promise<void>;
  /** The longest close() takes (closeStepper's deadline, then a minimum per step). */
  closeWithinMs: number;
}

/**
 * Starts the match and deliver workers, the index refresh and the (one) sweeper: wires the systems
 * (systems/*), each given the part of the process's resources it names in its type.
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
  // The calls this process will make first attempts of are held by its lease (taken first: a
  // process that cannot write to Postgres does not start).
  const lease = new Lease(db, logger.child({ module: 'lease' }), settings.leaseMs, (count) =>
    metrics.heldCallsReleased.inc(count),
  );
  await lease.start();
  let closing = false;
  const loaders = deliveryLoaders(db);
  const resources: SystemResources = {
    db,
    coordination,
    metrics,
    logger,
    matchQueue,
    deliverQueue,
    lease,
    loaders,
    models: loaders.models,
    index: webhooks.index,
    indexUpTo: (generation) => webhooks.upTo(generation),
    announce: (message) => webhooks.announce(message),
    closing: () => closing,
  };

  const limits = await startLimits(resources, settings);
  const deliverLogger = logger.child({ module: 'deliver' });
  const outcomes = new OutcomeRecorder({ ...resources, rollups: limits.rollups });
  const attempts = new Attempts(
    { ...resources, logger: deliverLogger, outcomes, limits },
    settings,
  );
  webhooks.onChange((id) => attempts.webhookChanged(id));
  const lanes = new Lanes(resources, settings);
  const deliveries = new Deliveries({
    ...resources,
    logger: deliverLogger,
    limits,
    lanes,
    attempts,
  });
  const { firstAttempts } = deliveries;
  const matcher = new Matcher({ ...resources, logger: logger.child({ module: 'match' }) });
  // Matching waits while this process has twice its pool of first attempts queued or in flight.
  const maxFirstAttempts = 2 * settings.deliverConcurrency;
  // Jobs put off for the database come back at its first answer (the lease valid again too: a
  // match job waits for it).
  const databaseReturns = new DatabaseReturns(
    async () => {
      await db.query('SELECT 1');
      if (!lease.valid) throw new Error('the lease is not renewed yet');
    },
    (count) => metrics.jobsResumedAfterDatabase.inc(count),
  );
  const workers = startQueueWorkers(coordination, logger, settings, {
    match: processorOf(matchEvent, {
      ...resources,
      matcher,
      firstAttempts,
      maxFirstAttempts,
      databaseReturns,
    }),
    deliver: processorOf(deliverWebhook, { deliveries, limits, metrics, databaseReturns }),
  });
  const localMatches = new LocalMatches({
    ...resources,
    logger: logger.child({ module: 'match' }),
    matcher,
    firstAttempts,
    maxFirstAttempts,
    enqueueTimeoutMs: settings.sweepEnqueueTimeoutMs,
  });
  const detachLocal = deps.localMatch?.attach(localMatches);
  metrics.collectQueues = queueCollector(metrics, [matchQueue, deliverQueue]);
  metrics.collectHealth = healthCollector(metrics, db);

  const sweeper = startSweeper({ ...resources, registry: deps.registry }, settings);
  const background = Background.start(resources, settings, (item, gate) =>
    deliveries.attemptForJob(item, { ...gate, stopping: () => closing || gate.stopping() }),
  );

  // What close() stops, in order.
  const closeSteps: [string, () => Promise<unknown>][] = [
    ['sweeper', () => sweeper.stop()],
    ['background', () => background.stop()],
    // Worker.close() stops fetching and waits for the jobs in flight, then the first attempts
    // the match worker started finish too.
    ['queue workers', () => workers.close()],
    ['database returns', () => databaseReturns.stop()],
    ['local matches', () => localMatches.drain()],
    ['first attempts', () => firstAttempts.drain()],
    ['lease', () => lease.stop()],
    ['limits', () => limits.stop()],
    ['queues', () => Promise.all([matchQueue.close(), deliverQueue.close()])],
    ['attempts', () => attempts.close()],
    ['webhook index', () => webhooks.stop()],
    ['workers connection', () => workers.disconnect()],
  ];
  return {
    index: webhooks.index,
    matchQueue,
    deliverQueue,
    sweeper,
    metrics,
    closeWithinMs: closeBoundMs(settings, closeSteps.length),
    async close() {
      // Outcome writes waiting for a database that is away give up from now on: their calls stay
      // held by the lease, which runs out, and another process's sweeper takes them over.
      closing = true;
      detachLocal?.();
      metrics.collectQueues = undefined;
      metrics.collectHealth = undefined;
      webhooks.stopReloading();
      const step = closeStepper(settings, logger);
      for (const [name, work] of closeSteps) await step(name, work);
    },
  };
}

/** What each step gets at least, even past the deadline. */
const CLOSE_STEP_MIN_MS = 1000;

function closeBoundMs(settings: DeliverySettings, steps: number): number {
  return settings.timeoutMs + settings.jobLockMs + steps * CLOSE_STEP_MIN_MS;
}

/**
 * Runs close()'s steps in turn, each until it finishes or the close's deadline passes (an
 * attempt's time and a job lock from the start: a job still in flight then would be another
 * worker's anyway), and at least a second each. A step that waits on a server gone silent (a
 * Redis master killed mid-command: its reply never comes) is logged by name and the next runs, so
 * that the held calls still go back and the connections still close; one that fails is logged
 * and the next runs too (runShutdownStep).
 */
function closeStepper(settings: DeliverySettings, logger: Logger) {
  const deadline = Date.now() + closeBoundMs(settings, 0);
  return (name: string, work: () => Promise<unknown>): Promise<void> =>
    runShutdownStep(
      logger,
      { step: name },
      work,
      Math.max(CLOSE_STEP_MIN_MS, deadline - Date.now()),
    );
}
