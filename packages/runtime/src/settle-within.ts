import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What `work` settles to, or `onTimeout()`'s value (or throw) once `ms` pass first. The work is
 * left to settle on its own; a rejection after the time is handled (Promise.race listens to it).
 */
export async function settleWithin<T, U>(
  work: Promise<T>,
  ms: number,
  onTimeout: () => U,
): Promise<T | U> {
  const timer = new AbortController();
  try {
    // Once the work has won, the timer's abort rejects the sleep: the race, settled, ignores it.
    return await Promise.race([
      work,
      sleep(ms, undefined, { signal: timer.signal }).then(onTimeout),
    ]);
  } finally {
    timer.abort();
  }
}
