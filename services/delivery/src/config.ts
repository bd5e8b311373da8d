import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv } from '@herald/runtime';

/** The delivery service's own variables (beside commonEnv). */
export const deliveryEnv = {
  /** How often the sweeper looks for stored events not yet matched, and enqueues them. */
  EVENT_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
  /** Events younger than this are left to the ingest request still enqueuing them. */
  EVENT_SWEEP_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
  /** Event ids read and enqueued per round trip by the sweeper. */
  EVENT_SWEEP_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(1000),
  /** How long one sweeper enqueue waits for Redis before trying again next interval. */
  EVENT_SWEEP_ENQUEUE_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(5000),
};

export const DeliveryConfig = z.object({
  ...commonEnv,
  ...deliveryEnv,
  REDIS_URL: commonEnv.REDIS_URL.default('redis://127.0.0.1:6379'),
  /** Port of the health and metrics endpoints. */
  PORT: httpEnv.PORT.default(3002),
  HOST: httpEnv.HOST,
  DOCS_URL: httpEnv.DOCS_URL,
});
export type DeliveryConfig = z.infer<typeof DeliveryConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): DeliveryConfig {
  return parseEnv(DeliveryConfig, env);
}
