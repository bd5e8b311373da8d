import { z } from 'zod';
import { commonEnv, httpEnv, parseEnv, replicaEnv, tracingEnv } from '@herald/runtime';
import { ingestEnv } from '@herald/ingest';
import { readEnv } from '@herald/read';
import { deliveryEnv } from '@herald/delivery';

/**
 * The single-process mode reads every service's variables. DATABASE_URL unset → the embedded
 * PostgreSQL; REDIS_URL unset → the queues on that PostgreSQL too (Postgres alone).
 */
export const StandaloneConfig = z.object({
  ...commonEnv,
  ...httpEnv,
  ...replicaEnv,
  ...tracingEnv,
  ...ingestEnv,
  ...readEnv,
  ...deliveryEnv,
  /**
   * Port on 127.0.0.1 of the embedded PostgreSQL started when DATABASE_URL is unset. 0: the port
   * of its last start when free, else any free one (the URL is in $HERALD_DATA_DIR/postgres/url).
   */
  EMBEDDED_POSTGRES_PORT: z.coerce.number().int().min(0).max(65_535).default(0),
});

type StandaloneConfig = z.infer<typeof StandaloneConfig>;

/**
 * The embedded default (no DATABASE_URL) is a development setup: unless SSRF_ALLOW_CIDRS is set
 * (`none` keeps every blocked range), webhooks may call receivers on this machine's loopback. The
 * split stack and the Docker image keep the guard (the image sets SSRF_ALLOW_CIDRS=none).
 */
const DEVELOPMENT_SSRF_ALLOW_CIDRS = '127.0.0.0/8,::1/128';

export interface StandaloneSettings extends StandaloneConfig {
  /** SSRF_ALLOW_CIDRS is the development default above (the banner says so). */
  loopbackReceiversByDefault: boolean;
}

export function loadConfig(env: Readonly<Record<string, string | undefined>>): StandaloneSettings {
  const loopbackReceiversByDefault = !env['DATABASE_URL'] && !env['SSRF_ALLOW_CIDRS'];
  const config = parseEnv(
    StandaloneConfig,
    loopbackReceiversByDefault ? { ...env, SSRF_ALLOW_CIDRS: DEVELOPMENT_SSRF_ALLOW_CIDRS } : env,
  );
  return { ...config, loopbackReceiversByDefault };
}
