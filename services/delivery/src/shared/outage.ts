import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, type Job } from 'bullmq';
import { isDbUnavailableError, sqlState } from '@herald/store';

/** The longest a job waits between two looks at a database that is away. */
const MAX_WAIT_MS = 5000;

/**
 * Puts a job off because Postgres is unreachable, without spending one of its attempts: an outage
 * of any length then strands nothing (attempts are for errors, and a job out of them is final).
 * The wait doubles with each look, from a quarter second to MAX_WAIT_MS, with jitter so that a
 * backlog does not come back all at once. Always throws (DelayedError tells BullMQ the job moved).
 */
export async function putOffUntilDatabaseReturns(
  job: Job,
  token: string | undefined,
): Promise<never> {
  const looks = Math.max(0, job.attemptsStarted - job.attemptsMade - 1);
  const wait = Math.ceil(
    Math.min(MAX_WAIT_MS, 250 * 2 ** Math.min(looks, 10)) * (0.75 + Math.random() / 2),
  );
  await job.moveToDelayed(Date.now() + wait, token);
  throw new DelayedError();
}

/**
 * Runs a write until it reaches the database: while Postgres is unreachable it is tried again,
 * every 100 ms doubling to 2 s, until `giveUp()` (the process is shutting down). For an attempt's
 * outcome: the request was sent, so sending it again because the record could not be written
 * would deliver it twice. A write Postgres chose as a deadlock's victim (40P01) was rolled back
 * whole, and is tried again too.
 */
export async function writeUntilStored<T>(
  write: () => Promise<T>,
  giveUp: () => boolean,
): Promise<T> {
  for (let wait = 100; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await write();
    } catch (error) {
      const again = isDbUnavailableError(error) || sqlState(error) === '40P01';
      if (!again || giveUp()) throw error;
      await sleep(wait);
    }
  }
}
