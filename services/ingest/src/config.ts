import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv, ssrfEnv } from '@herald/runtime';

/** The ingest service's own variables (beside commonEnv and httpEnv). */
export const ingestEnv = {
  /** SSRF_ALLOW_CIDRS: also checked when a webhook's URL names an IP address literally. */
  ...ssrfEnv,
  /**
   * How long POST /events waits for Redis to take the event ids after the commit; past it (or
   * with Redis down) the events stay stored and the delivery service's sweeper enqueues them.
   */
  ENQUEUE_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
};

export const IngestConfig = z.object({
  ...commonEnv,
  ...httpEnv,
  ...ingestEnv,
  REDIS_URL: commonEnv.REDIS_URL.default('redis://127.0.0.1:6379'),
});
export type IngestConfig = z.infer<typeof IngestConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): IngestConfig {
  return parseEnv(IngestConfig, env);
}
