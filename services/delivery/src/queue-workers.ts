import type { Job, Processor } from 'bullmq';
import {
  QUEUE_EVENT_MATCH,
  QUEUE_WEBHOOK_DELIVER,
  errorMessage,
  type DeliverJobData,
  type EventMatchJobData,
} from '@herald/contract';
import {
  closeRedis,
  createQueueWorker,
  connectRedis,
  postgresProblem,
  redisProblem,
  warnOncePerCause,
  type Coordination,
  type Logger,
} from '@herald/runtime';

/** A job kind (jobs/*.ts): its data's schema, and its handler, given a context. */
interface JobKind<Context, Data> {
  schema: { parse(data: unknown): Data };
  handler(ctx: Context, data: Data, job: Job<Data>, token: string | undefined): Promise<void>;
}

/** A worker's processor for jobs of `kind`: parses the job's data, then runs the handler. */
export function processorOf<Context, Data>(
  kind: JobKind<Context, Data>,
  context: Context,
): Processor<Data> {
  return (job: Job<Data>, token?: string) =>
    kind.handler(context, kind.schema.parse(job.data), job, token);
}

export interface QueueWorkerSettings {
  /** BullMQ's job lock; a dead worker's jobs run again within about 1.5 times this. */
  jobLockMs: number;
  matchConcurrency: number;
  deliverConcurrency: number;
}

export interface QueueWorkers {
  /** Stops fetching and waits for the jobs in flight. */
  close(): Promise<void>;
  /** Closes the workers' own connection (after `close`). */
  disconnect(): Promise<void>;
}

/**
 * The match and deliver workers, each job handed to its processor (processorOf). Deliver jobs are retries,
 * resends, calls that waited for their webhook's limits and the sweeper's re-adds; first attempts
 * start from the match worker.
 */
export function startQueueWorkers(
  coordination: Coordination,
  logger: Logger,
  settings: QueueWorkerSettings,
  processors: { match: Processor<EventMatchJobData>; deliver: Processor<DeliverJobData> },
): QueueWorkers {
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
  const start = <Data>(queue: string, processor: Processor<Data>, concurrency: number) =>
    createQueueWorker<Data>(
      queue,
      coordination,
      processor,
      { ...workerOptions, concurrency },
      workerConnection,
    );
  const matchWorker = start(QUEUE_EVENT_MATCH, processors.match, settings.matchConcurrency);
  // The process's pool (DELIVERY_CONCURRENCY) counts the attempts in flight, wherever they come
  // from.
  const deliverWorker = start(
    QUEUE_WEBHOOK_DELIVER,
    processors.deliver,
    settings.deliverConcurrency,
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
  return {
    async close() {
      // BullMQ's Worker.close() waits for its blocking connection to end. A Redis Cluster client
      // that lost nodes (a master failed over, the whole cluster down) may never say it ended:
      // the delivery's close bounds this step (closeStepper).
      await Promise.all([matchWorker.close(), deliverWorker.close()]);
    },
    async disconnect() {
      if (workerConnection) await closeRedis(workerConnection);
    },
  };
}
