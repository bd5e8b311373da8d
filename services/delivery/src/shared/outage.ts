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
  returns?: DatabaseReturns,
): Promise<never> {
  const looks = Math.max(0, job.attemptsStarted - job.attemptsMade - 1);
  const wait = Math.ceil(
    Math.min(MAX_WAIT_MS, 250 * 2 ** Math.min(looks, 10)) * (0.75 + Math.random() / 2),
  );
  await job.moveToDelayed(Date.now() + wait, token);
  returns?.expect(job);
  throw new DelayedError();
}

/** How often the database is asked whether it is back while jobs wait for it. */
const RETURN_PROBE_MS = 250;
/** Jobs promoted together (one round trip each) when it is. */
const PROMOTE_BATCH = 100;

/**
 * Brings back the jobs this process put off for the database (putOffUntilDatabaseReturns) as soon
 * as it is back: while any waits, `probe` (a `SELECT 1`, and this process's lease valid) runs
 * every RETURN_PROBE_MS, and its first success promotes them all. Without it, work waited up to
 * MAX_WAIT_MS (and its jitter) past an outage's end. A job's own wait stays the fallback: for one
 * not promoted (this process stopped, or the queue was unreachable).
 */
export class DatabaseReturns {
  readonly #waiting = new Map<string, Job>();
  #watching: Promise<void> | undefined;
  #stopped = false;

  constructor(
    private readonly probe: () => Promise<unknown>,
    /** Hears how many jobs each return brought back (those still delayed then). */
    private readonly onPromoted: (count: number) => void = () => undefined,
    private readonly probeMs = RETURN_PROBE_MS,
  ) {}

  /** A job now delayed until the database answers. */
  expect(job: Job): void {
    if (this.#stopped) return;
    this.#waiting.set(`${job.queueName}\u0000${job.id ?? ''}`, job);
    this.#watch();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#waiting.clear();
    await this.#watching;
  }

  #watch(): void {
    if (this.#watching || this.#stopped) return;
    this.#watching = this.#probeUntilBack().finally(() => {
      this.#watching = undefined;
      // Jobs put off while the last promotions went out.
      if (this.#waiting.size > 0) this.#watch();
    });
  }

  async #probeUntilBack(): Promise<void> {
    while (this.#waiting.size > 0 && !this.#stopped) {
      await sleep(this.probeMs);
      const back = await this.probe().then(
        () => true,
        () => false,
      );
      if (!back) continue;
      const jobs = [...this.#waiting.values()];
      this.#waiting.clear();
      let promoted = 0;
      for (let i = 0; i < jobs.length && !this.#stopped; i += PROMOTE_BATCH) {
        // One no longer delayed (its own wait ended, or it was taken) refuses: nothing to do.
        const batch = jobs.slice(i, i + PROMOTE_BATCH);
        const done = await Promise.all(
          batch.map((job) =>
            job.promote().then(
              () => 1,
              () => 0,
            ),
          ),
        );
        promoted += done.reduce<number>((sum, n) => sum + n, 0);
      }
      this.onPromoted(promoted);
      return;
    }
  }
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
