export interface RetryPolicy {
  scheduleMs: readonly number[];
  /** Jitter as a fraction of each delay (0.1 = ±10 %). */
  jitter: number;
  /** The longest a Retry-After may push an attempt (1 day by default). */
  retryAfterMaxMs: number;
}

/**
 * The delay before auto retry number `retry` (1-based), or null when the schedule is exhausted.
 * A Retry-After pushes it later, never earlier, up to retryAfterMaxMs.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  retry: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const base = policy.scheduleMs[retry - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (1 + policy.jitter * (2 * random() - 1)));
  if (retryAfterMs === null) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, policy.retryAfterMaxMs));
}

/** Retry-After as delta-seconds or an HTTP date, in ms from `now`; null when absent or invalid. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
