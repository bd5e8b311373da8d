import { z } from 'zod';
import { payloadEnv } from '@herald/payload';
import { commonEnv, httpEnv, parseEnv, replicaEnv, ssrfEnv, tracingEnv } from '@herald/runtime';

/** The ingest service's own variables (beside commonEnv and httpEnv). */
export const ingestEnv = {
  /** SSRF_ALLOW_CIDRS: also checked when a webhook's URL names an IP address literally. */
  ...ssrfEnv,
  /**
   * How long POST /events waits for Redis to take the event ids after the commit; past it (or
   * with Redis down) the events stay stored and the delivery service's sweeper enqueues them.
   */
  ENQUEUE_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /**
   * How long POST /events, once its events are committed, waits at most for the writes of the
   * requests running beside it, so that their ids go to Redis together as one match job; 0: never.
   * Off by default: fewer match jobs, but the wait cost one client's 4 requests in flight more
   * throughput than the jobs saved (bench:ingest, services/ingest/README.md).
   */
  ENQUEUE_WAIT_FOR_WRITES_MS: z.coerce.number().int().min(0).max(1000).default(0),
  /** SITE_ID: `site_id` of delivered payloads; ingest renders previews with it, as delivery sends. */
  ...payloadEnv,
  /**
   * Folder of the built web console (services/console/dist), served at /console. Unset: the
   * build beside this service in the repository. A folder without index.html: /console is a 404.
   */
  CONSOLE_DIR: z.string().min(1).optional(),
};

export const IngestConfig = z.object({
  ...commonEnv,
  ...httpEnv,
  ...replicaEnv,
  ...tracingEnv,
  ...ingestEnv,
});
export type IngestConfig = z.infer<typeof IngestConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): IngestConfig {
  return parseEnv(IngestConfig, env);
}
