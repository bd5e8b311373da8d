import { createHash } from 'node:crypto';
import {
  Queue,
  RedisQueueBackend,
  Worker,
  type IQueueBackend,
  type JobsOptions,
  type Processor,
  type QueueOptions,
  type WorkerOptions,
} from 'bullmq';
import {
  DELIVER_WEBHOOK_JOB,
  MATCH_EVENT_JOB,
  MATCH_JOB_EVENTS_MAX,
  QUEUE_EVENT_MATCH,
  QUEUE_WEBHOOK_DELIVER,
  deliverJobId,
  eventJobId,
  resendJobId,
  type DeliverJobData,
  type EventMatchJobData,
} from '@herald/contract';
import type { Coordination } from './coordination.js';
import { postgresProblem, redisProblem, warnOncePerCause } from './dependencies.js';
import type { LocalMatchHandOff } from './local-match.js';
import type { Logger } from './logger.js';
import type { RedisClient } from './redis.js';
import { createPostgresQueueBackend } from './postgres-backend.js';

// The two queues' contract: names (persisted, in @herald/contract), where they live, producers,
// job ids and job options. Workers (services/delivery) consume them with createQueueWorker.

/**
 * BullMQ key prefix of both queues on Redis, for producers and workers alike: a `{hash tag}` so
 * that each queue's keys share one Redis Cluster slot. Persisted in every key: changing it strands
 * jobs. On Postgres the queues live in the schema queueSchema(REDIS_PREFIX) instead.
 */
export const queuePrefix = (redisPrefix: string): string => `{${redisPrefix}}`;

/** A queue on either backend: Redis (REDIS_URL) or BullMQ's PostgreSQL backend. */
type AnyQueue<Data, Name extends string> = Queue<
  Data,
  unknown,
  Name,
  Data,
  unknown,
  Name,
  IQueueBackend,
  unknown
>;

export type EventMatchQueue = AnyQueue<EventMatchJobData, typeof MATCH_EVENT_JOB>;

/** Connections of a queue's or a worker's pool on Postgres (each opens its own). */
const QUEUE_POOL_SIZE = 4;

/** Where the queues live, as BullMQ's options take it (and the backend's factory on Postgres). */
function queueStore(
  coordination: Coordination,
  role: 'producer' | 'worker',
  poolSize = QUEUE_POOL_SIZE,
): { options: QueueOptions<unknown>; postgres: boolean } {
  if (coordination.kind === 'redis') {
    return {
      options: { connection: coordination.redis, prefix: queuePrefix(coordination.prefix) },
      postgres: false,
    };
  }
  return {
    options: {
      connection: {
        connectionString: coordination.url,
        schema: coordination.queueSchema,
        max: poolSize,
        application_name: `herald-queues-${role}`,
        // A producer fails fast when Postgres is away, as on Redis (enableOfflineQueue: false).
        ...(role === 'producer' ? { connectionTimeoutMillis: 2000 } : {}),
      },
    },
    postgres: true,
  };
}

/** What went wrong with the queues' store, in Herald's words. */
function queueProblem(coordination: Coordination, error: unknown): string {
  return coordination.kind === 'redis'
    ? redisProblem(coordination.redis, error)
    : postgresProblem(error);
}

function openQueue<Data, Name extends string>(
  name: string,
  coordination: Coordination,
  options: Omit<QueueOptions, 'connection'>,
): AnyQueue<Data, Name> {
  const store = queueStore(coordination, 'producer');
  const merged = { ...store.options, ...options };
  return (
    store.postgres
      ? new Queue(name, merged as QueueOptions<never>, createPostgresQueueBackend)
      : new Queue(name, merged)
  ) as AnyQueue<Data, Name>;
}

/** How soon a worker on Postgres alone tries its queue store again after a failure. */
const POSTGRES_RUN_RETRY_DELAY_MS = 500;

/**
 * A worker of one of the queues, on the backend `coordination` says. On Redis `redis` is its
 * blocking connection (the worker role); on Postgres it opens a pool of `concurrency` connections
 * at most (and one for LISTEN).
 */
export function createQueueWorker<Data>(
  name: string,
  coordination: Coordination,
  processor: Processor<Data>,
  options: Omit<WorkerOptions, 'connection' | 'prefix'> & { concurrency: number },
  redis?: RedisClient,
): Worker<Data, unknown, string, IQueueBackend, never, unknown> {
  const store = queueStore(coordination, 'worker', Math.min(20, Math.max(2, options.concurrency)));
  const connection = coordination.kind === 'redis' && redis ? { connection: redis } : {};
  // A worker whose queue store failed a fetch or a job's move waits runRetryDelay (BullMQ: 15 s)
  // before it tries again. On Redis its commands wait for the reconnection instead of failing; on
  // Postgres alone the store is the database, so every Postgres blip cost 15 s of standstill.
  const retry = store.postgres ? { runRetryDelay: POSTGRES_RUN_RETRY_DELAY_MS } : {};
  const merged = { ...store.options, ...connection, ...retry, ...options };
  return (store.postgres
    ? new Worker(name, processor, merged as WorkerOptions<never>, createPostgresQueueBackend)
    : new Worker(name, processor, merged as WorkerOptions)) as unknown as Worker<
    Data,
    unknown,
    string,
    IQueueBackend,
    never,
    unknown
  >;
}

/** A match job's retry budget (MATCH_JOB_ATTEMPTS, MATCH_JOB_BACKOFF_MS). */
export interface MatchJobRetries {
  attempts: number;
  /** First backoff delay; each next one doubles (with jitter). */
  backoffMs: number;
}

/**
 * The producer side of the `event-match` queue (ingest after a commit, the sweeper). It shares
 * the process's producer connection, which fails fast while Redis is away.
 *
 * A completed job leaves Redis at once: a job id is only a guard against the same match waiting
 * twice, and a completed one kept under its id would turn the sweeper's later re-add of the same
 * events into a silent no-op. Failed jobs stay a week for operators to read; the sweeper replaces
 * a failed job whose events are still unmatched (requeueEventMatches). Attempts are spent only on
 * errors: a database outage delays the job without spending any (the match worker).
 */
export function createEventMatchQueue(
  coordination: Coordination,
  logger: Logger,
  retries: MatchJobRetries = { attempts: 10, backoffMs: 1000 },
): EventMatchQueue {
  const queue: EventMatchQueue = openQueue(QUEUE_EVENT_MATCH, coordination, {
    defaultJobOptions: {
      attempts: retries.attempts,
      backoff: { type: 'exponential', delay: retries.backoffMs, jitter: 0.5 },
      removeOnComplete: true,
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
  queue.on('error', (error: Error) =>
    warnOncePerCause(logger, queueProblem(coordination, error), {
      err: error.message,
      queue: QUEUE_EVENT_MATCH,
    }),
  );
  return queue;
}

/** The queues' store is not usable right now (down, reconnecting, or too slow). */
export class EnqueueUnavailableError extends Error {}

/**
 * Job id of a match job: for one event its id (eventJobId), for several a digest of the ids, so
 * that enqueuing the same ids again is a no-op while the job exists, and a different set (a
 * sweeper page that grew) is a job of its own.
 */
export function eventMatchJobId(eventIds: readonly string[]): string {
  if (eventIds.length === 1) return eventJobId(eventIds[0]!);
  const digest = createHash('sha256').update(eventIds.join('\n')).digest('hex');
  return `events-${eventIds.length}-${digest.slice(0, 32)}`;
}

/**
 * Enqueues the match of events stored together: one job per MATCH_JOB_EVENTS_MAX ids (data: the
 * ids only; job id: eventMatchJobId). Gives up after timeoutMs: Postgres holds the events and the
 * sweeper enqueues whatever is left unmatched.
 */
export async function enqueueEventMatches(
  queue: EventMatchQueue,
  eventIds: readonly string[],
  timeoutMs: number,
): Promise<void> {
  if (eventIds.length === 0) return;
  const jobs: { name: typeof MATCH_EVENT_JOB; data: EventMatchJobData; opts: JobsOptions }[] =
    chunks(eventIds, MATCH_JOB_EVENTS_MAX).map((ids) => ({
      name: MATCH_EVENT_JOB,
      data: { eventIds: ids },
      opts: { jobId: eventMatchJobId(ids) },
    }));
  // One timer bounds the whole enqueue: waiting for the connection and the add.
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new EnqueueUnavailableError(`enqueue timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    const backend = queue.getBackend();
    if (backend instanceof RedisQueueBackend) {
      const client = await Promise.race([backend.client, timedOut]);
      if (client.status !== 'ready') {
        throw new EnqueueUnavailableError(`Redis is not ready (${client.status})`);
      }
    } else {
      await Promise.race([queue.waitUntilReady(), timedOut]);
    }
    await Promise.race([
      // One job (a request's batch) needs no MULTI around it.
      jobs.length === 1
        ? queue.add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts)
        : queue.addBulk(jobs),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The sweeper's enqueue of events still unmatched: like enqueueEventMatches, except that a job
 * already finished under the same id (failed out of attempts, or completed by an older version
 * that kept completed jobs) is replaced instead of silently blocking the add. Returns how many ids
 * went into a new job and how many are in a job that is still waiting, delayed or running.
 */
export async function requeueEventMatches(
  queue: EventMatchQueue,
  eventIds: readonly string[],
  timeoutMs: number,
): Promise<{ added: number; queued: number }> {
  let added = 0;
  let queued = 0;
  const fresh: string[] = [];
  for (const ids of chunks(eventIds, MATCH_JOB_EVENTS_MAX)) {
    const jobId = eventMatchJobId(ids);
    const state = await queue.getJobState(jobId);
    if (state === 'failed' || state === 'completed') await queue.remove(jobId);
    else if (state !== 'unknown') {
      queued += ids.length;
      continue;
    }
    fresh.push(...ids);
    added += ids.length;
  }
  await enqueueEventMatches(queue, fresh, timeoutMs);
  return { added, queued };
}

function chunks<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** One request's write of events, as the enqueuer follows it (EventMatchEnqueuer.startWrite). */
export interface EventWrite {
  /** The write committed these ids: enqueue them (resolves once they are in Redis). */
  enqueue(eventIds: readonly string[]): Promise<void>;
  /** The write failed or stored nothing to enqueue. */
  end(): void;
}

interface Waiting {
  ids: readonly string[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Enqueues match jobs for concurrent requests together, as one job (up to MATCH_JOB_EVENTS_MAX
 * ids): a match job's fixed cost (BullMQ's scripts on both sides, a Redis round trip, a worker
 * wake-up) is most of the work of a one-event request. Ids that arrive while an enqueue is on
 * its way to Redis go in the next one; and, given a `waitForWritesMs`, ids whose request committed
 * while other requests' writes were still running (startWrite) wait for those writes, at most
 * that long, to go with their ids. At low load each request's ids go at once, alone; each
 * request's promise resolves only once its own ids are in Redis. Given the process's `local`
 * hand-off, ids its match workers take go to them in memory instead, and resolve at once.
 */
export class EventMatchEnqueuer {
  #waiting: Waiting[] = [];
  #sending = false;
  /** Writes in flight, by start number. */
  readonly #writes = new Set<number>();
  #started = 0;
  /** The waiting group goes once the writes started before its first ids have ended. */
  #waitsFor = -1;
  #deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly queue: EventMatchQueue,
    private readonly timeoutMs: number,
    /** 0: never wait for writes (ENQUEUE_WAIT_FOR_WRITES_MS of ingest). */
    private readonly waitForWritesMs = 0,
    /** The match workers of this process, when it runs them (the single process). */
    private readonly local?: Pick<LocalMatchHandOff, 'offer'>,
  ) {}

  /** A request starts writing events: enqueues waiting meanwhile may wait for its ids. */
  startWrite(): EventWrite {
    const number = this.#started++;
    this.#writes.add(number);
    return {
      enqueue: (eventIds) => {
        this.#writes.delete(number);
        return this.enqueue(eventIds);
      },
      end: () => {
        if (this.#writes.delete(number)) this.#next();
      },
    };
  }

  /** Resolves once these ids are in Redis; rejects as enqueueEventMatches would. */
  enqueue(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length > 0 && this.local?.offer(eventIds)) {
      // A write that ended may be what a waiting group waited for.
      this.#next();
      return Promise.resolve();
    }
    const done = this.#add(eventIds);
    this.#next();
    return done;
  }

  #add(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return Promise.resolve();
    if (this.#waiting.length === 0 && this.waitForWritesMs > 0) {
      this.#waitsFor = this.#started - 1;
      if (this.#writes.size > 0) {
        this.#deadline = setTimeout(() => {
          this.#deadline = undefined;
          this.#waitsFor = -1;
          this.#next();
        }, this.waitForWritesMs);
        this.#deadline.unref();
      }
    }
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ ids: eventIds, resolve, reject });
    });
  }

  /** Sends the waiting group unless an enqueue is on its way or writes it waits for run. */
  #next(): void {
    if (this.#sending || this.#waiting.length === 0) return;
    for (const number of this.#writes) if (number <= this.#waitsFor) return;
    clearTimeout(this.#deadline);
    this.#deadline = undefined;
    const group = this.#waiting;
    this.#waiting = [];
    this.#sending = true;
    enqueueEventMatches(
      this.queue,
      group.flatMap((entry) => entry.ids),
      this.timeoutMs,
    )
      .then(
        () => {
          for (const entry of group) entry.resolve();
        },
        (error: unknown) => {
          for (const entry of group) entry.reject(error);
        },
      )
      .finally(() => {
        this.#sending = false;
        // Ids that came meanwhile waited for this enqueue, not for writes.
        this.#waitsFor = -1;
        this.#next();
      });
  }
}

export type DeliverQueue = AnyQueue<DeliverJobData, typeof DELIVER_WEBHOOK_JOB>;

/**
 * The producer side of the `webhook-deliver` queue (the delivery workers' retries, deferrals and
 * the sweeper's re-adds; ingest's resends), on the process's producer connection. Its jobs carry
 * their options (deliverJob, enqueueResend): the queue has no defaults.
 */
export function createDeliverQueue(coordination: Coordination, logger: Logger): DeliverQueue {
  const queue: DeliverQueue = openQueue(QUEUE_WEBHOOK_DELIVER, coordination, {});
  queue.on('error', (error: Error) =>
    warnOncePerCause(logger, queueProblem(coordination, error), {
      err: error.message,
      queue: QUEUE_WEBHOOK_DELIVER,
    }),
  );
  return queue;
}

/**
 * Options of a call's attempt job (all but resends). It leaves Redis once done: Postgres keeps the
 * log, and the sweeper may re-add the same id. Its attempts are for errors before anything was
 * sent (an attempt's outcome, failure included, completes the job).
 */
export const DELIVER_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
} as const;

/** Options of a manual resend's job: leaves Redis once done, like the others; fewer attempts. */
export const RESEND_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 3,
} as const;

/** A call to attempt: its first attempt (no `retry`), or its auto retry number `retry`. */
export interface DeliverCall {
  id: string;
  webhookId: string;
  retry?: number | undefined;
  /** It has its turn in its webhook's rate limit queue. */
  rateSlot?: boolean | undefined;
  /**
   * A lane's call released by its predecessor's outcome (flow control): a job id of its own, as
   * the job that parked it may not have left Redis yet (the claim keeps two from both sending).
   */
  wake?: boolean | undefined;
}

let wakes = 0;

/**
 * The job of one attempt of a call: data the ids (and the retry it carries out), id one per
 * (call, retry) (deliverJobId), so re-adding a call whose job still exists is a no-op.
 */
function deliverJob(
  { id: callId, webhookId, retry, rateSlot, wake }: DeliverCall,
  delayMs?: number,
): { name: typeof DELIVER_WEBHOOK_JOB; data: DeliverJobData; opts: JobsOptions } {
  return {
    name: DELIVER_WEBHOOK_JOB,
    data: {
      callId,
      webhookId,
      ...(retry === undefined ? {} : { retry }),
      ...(rateSlot ? { rateSlot } : {}),
    },
    opts: {
      ...DELIVER_JOB_OPTIONS,
      jobId: wake
        ? `${deliverJobId(callId, retry)}-w${Date.now().toString(36)}${(wakes++).toString(36)}`
        : deliverJobId(callId, retry),
      // Whole milliseconds: BullMQ on Postgres keeps times in bigint columns.
      ...(delayMs === undefined ? {} : { delay: Math.ceil(delayMs) }),
    },
  };
}

/**
 * Enqueues one attempt job per call, in one round trip: the sweeper's re-adds, and the first
 * attempts whose webhook was at its in-flight limit (each put off by its own `delayMs()`).
 */
export async function enqueueDeliveries(
  queue: DeliverQueue,
  calls: readonly DeliverCall[],
  delayMs?: () => number,
): Promise<void> {
  if (calls.length === 0) return;
  await queue.addBulk(calls.map((call) => deliverJob(call, delayMs?.())));
}

/**
 * Enqueues calls due at `dueAt` (null: now), in one round trip: the lane calls (flow control)
 * an outcome or the sweeper released (`wake`: see DeliverCall), or batches whose window is open.
 */
export async function enqueueDueCalls(
  queue: DeliverQueue,
  calls: readonly { id: string; webhookId: string; dueAt: Date | null }[],
  wake: boolean,
): Promise<void> {
  const now = Date.now();
  const delays = calls.map((call) => Math.max(0, (call.dueAt?.getTime() ?? now) - now));
  let next = 0;
  await enqueueDeliveries(
    queue,
    calls.map((call) => ({ id: call.id, webhookId: call.webhookId, wake })),
    () => delays[next++] ?? 0,
  );
}

/** Enqueues auto retry number `retry` of a call, due in `delayMs`. */
export async function enqueueRetry(
  queue: DeliverQueue,
  call: { id: string; webhookId: string },
  retry: number,
  delayMs: number,
): Promise<void> {
  const { name, data, opts } = deliverJob({ ...call, retry }, delayMs);
  await queue.add(name, data, opts);
}

/**
 * Enqueues a manual resend of a call: a job id of its own each time (resendJobId), so a resend is
 * never mistaken for a repeat of an attempt, nor of another resend.
 */
export async function enqueueResend(
  queue: DeliverQueue,
  call: { id: string; webhookId: string },
): Promise<void> {
  await queue.add(
    DELIVER_WEBHOOK_JOB,
    { callId: call.id, webhookId: call.webhookId, resend: true },
    { jobId: resendJobId(call.id), ...RESEND_JOB_OPTIONS },
  );
}
