import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv, ssrfEnv } from '@herald/runtime';

/** The ingest service's own variables (beside commonEnv and httpEnv). */
export const ingestEnv = {
  /** SSRF_ALLOW_CIDRS: also checked when a webhook's URL names an IP address literally. */
  ...ssrfEnv,
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
