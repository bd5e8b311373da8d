import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv } from '@herald/runtime';

/** The delivery service's own variables (beside commonEnv). */
export const deliveryEnv = {};

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
