import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv } from '@herald/runtime';
import { ingestEnv } from '@herald/ingest';
import { readEnv } from '@herald/read';
import { deliveryEnv } from '@herald/delivery';

/** The single-process mode reads every service's variables. REDIS_URL unset → embedded Redis. */
export const StandaloneConfig = z.object({
  ...commonEnv,
  ...httpEnv,
  ...ingestEnv,
  ...readEnv,
  ...deliveryEnv,
  /** Port of the embedded redis-server started when REDIS_URL is unset and 6379 is free. */
  EMBEDDED_REDIS_PORT: z.coerce.number().int().min(1).max(65_535).default(6379),
});
export type StandaloneConfig = z.infer<typeof StandaloneConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): StandaloneConfig {
  return parseEnv(StandaloneConfig, env);
}
