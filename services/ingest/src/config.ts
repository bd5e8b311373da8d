import { z } from 'zod';
import { parseCidrList } from '@herald/contract';
import { deliveryEnv } from '@herald/delivery';
import { commonEnv, httpEnv, parseEnv } from '@herald/runtime';

/** The ingest service's own variables (beside commonEnv and httpEnv). */
export const ingestEnv = {
  /** `site_id` of delivered payloads; ingest renders previews with it (same variable as delivery). */
  SITE_ID: deliveryEnv.SITE_ID,
  /**
   * Folder of the built web console (services/console/dist), served at /console. Unset: the
   * build beside this service in the repository. A folder without index.html: /console is a 404.
   */
  CONSOLE_DIR: z.string().min(1).optional(),
  /**
   * CIDRs (comma-separated) exempt from the SSRF blocked ranges of API.md §6.3, at webhook creation
   * and at delivery. Default none; for local development use "127.0.0.0/8,::1/128".
   */
  SSRF_ALLOW_CIDRS: z
    .string()
    .default('')
    .transform((value, ctx) => {
      try {
        return parseCidrList(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
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
