/**
 * What a benchmark's Postgres backends are doing, sampled from pg_stat_activity: running which
 * statement, waiting for a lock (which kind, in which statement), idle in a transaction or idle.
 * A backend active and waiting for nothing is on a CPU (or queued for one), so the running
 * statements' shares are a sampling profile of the backends' CPU by statement. Backends named by
 * `application_name` (a benchmark's pools), the sampling connection left out.
 */
import type { Queryable } from '@herald/store';

export interface ActivitySampler {
  /** Stops sampling; the mean number of backends in each state, largest first. */
  stop(): Promise<{ what: string; mean: number }[]>;
}

export function sampleActivity(
  db: Queryable,
  applicationName: string,
  intervalMs = 20,
): ActivitySampler {
  const counts = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await db.query<{ what: string; n: string }>(
        `SELECT CASE WHEN state <> 'active' THEN coalesce(state, '?')
             ELSE CASE WHEN wait_event_type = 'Lock' THEN 'waiting for a lock (' || wait_event || ')'
                       WHEN wait_event_type IS NOT NULL
                         THEN 'waiting for ' || wait_event_type || ' ' || wait_event
                       ELSE 'running' END
               || ': ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 80) END AS what,
           count(*) AS n
         FROM pg_stat_activity
         WHERE left(application_name, length($1)) = $1 AND pid <> pg_backend_pid() GROUP BY 1`,
        [applicationName],
      );
      samples++;
      for (const row of rows) counts.set(row.what, (counts.get(row.what) ?? 0) + Number(row.n));
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return [...counts]
        .map(([what, n]) => ({ what, mean: n / Math.max(1, samples) }))
        .sort((a, b) => b.mean - a.mean);
    },
  };
}
