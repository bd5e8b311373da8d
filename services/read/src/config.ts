import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv } from '@herald/runtime';

/** The read service's own variables (beside commonEnv and httpEnv). */
export const readEnv = {
  // Build a per-model expression index the first time a listing filters or sorts on a field
  // (CREATE INDEX CONCURRENTLY, in the background). "false" when the database user may not
  // create indexes, or to manage them by hand.
  READ_EXPRESSION_INDEXES: z
    .enum(['true', 'false'])
    .default('true')
    .transform((value) => value === 'true'),
};

export const ReadConfig = z.object({
  ...commonEnv,
  ...httpEnv,
  ...readEnv,
  REDIS_URL: commonEnv.REDIS_URL.default('redis://127.0.0.1:6379'),
});
export type ReadConfig = z.infer<typeof ReadConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): ReadConfig {
  return parseEnv(ReadConfig, env);
}
