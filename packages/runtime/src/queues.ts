import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  MATCH_EVENT_JOB,
  QUEUE_EVENT_MATCH,
  eventJobId,
  type EventMatchJobData,
} from '@herald/contract';
import type { Logger } from './logger.js';

/** BullMQ key prefix: a `{hash tag}` so that each queue's keys share one Redis Cluster slot. */
export const queuePrefix = (redisPrefix: string): string => `{${redisPrefix}}`;

export type EventMatchQueue = Queue<EventMatchJobData, unknown, typeof MATCH_EVENT_JOB>;

/**
 * The producer side of the `event-match` queue (ingest after a commit, the sweeper). It shares
 * the process's producer connection, which fails fast while Redis is away.
 */
export function createEventMatchQueue(
  redis: Redis,
  redisPrefix: string,
  logger: Logger,
): EventMatchQueue {
  const queue: EventMatchQueue = new Queue(QUEUE_EVENT_MATCH, {
    connection: redis,
    prefix: queuePrefix(redisPrefix),
    defaultJobOptions: {
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000, jitter: 0.5 },
      removeOnComplete: { count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
  queue.on('error', (error: Error) =>
    logger.warn({ err: error.message }, 'event-match queue error'),
  );
  return queue;
}

/** The Redis connection is not usable right now (down, reconnecting, or too slow). */
export class EnqueueUnavailableError extends Error {}

/**
 * Enqueues one match job per event (data: the id only; job id: eventJobId, so a repeat is a
 * no-op while the job exists). Gives up after timeoutMs: Postgres holds the events and the
 * sweeper enqueues whatever is left unmatched.
 */
export async function enqueueEventMatches(
  queue: EventMatchQueue,
  eventIds: readonly string[],
  timeoutMs: number,
): Promise<void> {
  if (eventIds.length === 0) return;
  const client = (await Promise.race([
    queue.client,
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), timeoutMs).unref()),
  ])) as Redis | undefined;
  if (!client || client.status !== 'ready') {
    throw new EnqueueUnavailableError(`Redis is not ready (${client?.status ?? 'timeout'})`);
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      queue.addBulk(
        eventIds.map((eventId) => ({
          name: MATCH_EVENT_JOB,
          data: { eventId },
          opts: { jobId: eventJobId(eventId) },
        })),
      ),
      new Promise((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new EnqueueUnavailableError(`enqueue timed out after ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
