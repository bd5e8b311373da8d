import { z } from 'zod';

/** A configuration value is wrong; the message names every offending variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses environment variables with a zod schema. Empty strings count as unset, so that
 * `FOO=` in a .env file falls back to the default. Throws ConfigError naming each variable.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
): z.infer<S> {
  const cleaned: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value !== '') cleaned[key] = value;
  }
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const name = issue.path.join('.') || '(environment)';
      const got = issue.path.length ? cleaned[String(issue.path[0])] : undefined;
      return `${name}: ${issue.message}${got !== undefined ? ` (got ${JSON.stringify(got)})` : ''}`;
    }),
  );
}

/** A Redis Cluster's seed nodes, with the credentials and TLS every node shares. */
export interface RedisClusterTarget {
  nodes: { host: string; port: number }[];
  username?: string | undefined;
  password?: string | undefined;
  tls: boolean;
}

/**
 * REDIS_CLUSTER_NODES: comma-separated `host:port` seeds, or URLs as REDIS_URL takes them
 * (`redis://user:password@host:port`, `rediss://` for TLS). The nodes of a cluster share their
 * credentials and TLS: those of the first URL apply to every node; another URL that says otherwise
 * is an error (thrown, as a message for the configuration's error).
 */
export function parseClusterNodes(value: string): RedisClusterTarget {
  const nodes: RedisClusterTarget['nodes'] = [];
  let auth: { username?: string; password?: string; tls: boolean } | undefined;
  const entries = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  for (const [index, entry] of entries.entries()) {
    // Named by position: an entry may hold a password.
    const problem = (why: string): Error => new Error(`node ${index + 1} ${why}`);
    let url: URL;
    try {
      url = new URL(entry.includes('://') ? entry : `redis://${entry}`);
    } catch {
      throw problem('is neither host:port nor a redis:// URL');
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw problem('must be host:port or a redis:// or rediss:// URL');
    }
    const port = Number(url.port || 6379);
    if (!url.hostname || !Number.isInteger(port) || port < 1) {
      throw problem('has no host or no valid port');
    }
    nodes.push({ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port });
    if (!entry.includes('://')) continue;
    const these = {
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      tls: url.protocol === 'rediss:',
    };
    if (!auth) auth = these;
    else if (JSON.stringify(these) !== JSON.stringify(auth)) {
      throw problem("disagrees with the first URL's user, password or TLS (a cluster shares them)");
    }
  }
  if (nodes.length === 0) throw new Error('no node');
  return { nodes, ...(auth ?? { tls: false }) };
}

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const bool = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');
const url = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL (${protocols.join(' or ')})` },
  );

/** Variables every service reads. */
export const commonEnv = {
  /** pino level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * PostgreSQL URL. Required by the split services; unset in the single process → its embedded
   * PostgreSQL under HERALD_DATA_DIR.
   */
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  /**
   * Folder for the single process's embedded data: the embedded PostgreSQL (postgres/), the child
   * redis-server, the generated admin token.
   */
  HERALD_DATA_DIR: z.string().default('.herald'),
  /**
   * Connections per process in the Postgres pool; the delivery workers, with Postgres, open two
   * more pools of this size (services/delivery, openWorkerDb).
   */
  DB_POOL_SIZE: int(1, 500).default(10),
  /**
   * Redis URL (the queues, rate limits, pub/sub). Unset: all of it on Postgres alone, which then
   * needs DATABASE_URL (docs/architecture.md, Redis or Postgres alone).
   */
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  /**
   * A Redis Cluster instead of REDIS_URL's server: its seed nodes, comma-separated, each
   * `host:port` or a URL as REDIS_URL takes it (the first URL's user, password and TLS apply to
   * every node). Every queue and key of Herald then lives on the cluster (docs/operations.md,
   * Redis Cluster). Set one of REDIS_URL and REDIS_CLUSTER_NODES.
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseClusterNodes(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    })
    .optional(),
  /** Prefix of every Redis key Herald writes (queues use it as a {hash tag} for Redis Cluster). */
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_:-]{1,64}$/, 'letters, digits, _ : - only')
    .default('herald'),
  /**
   * Attempts of a match job that fails with an error (a database outage does not spend them: the
   * job waits for the database). A job out of attempts stays in the failed set; the delivery
   * sweeper matches its events again.
   */
  MATCH_JOB_ATTEMPTS: int(1, 1000).default(10),
  /** First backoff between a match job's attempts; each next one doubles. */
  MATCH_JOB_BACKOFF_MS: int(10, 3_600_000).default(1000),
  /**
   * On SIGTERM, time during which /readyz answers 503 while everything else is still served, so
   * that load balancers stop routing here before connections are refused. SIGINT does not wait.
   */
  SHUTDOWN_READINESS_DELAY_MS: int(0, 600_000).default(5000),
  /** Time given to in-flight work on SIGTERM before connections are cut. */
  SHUTDOWN_GRACE_MS: int(0, 600_000).default(10_000),
  /** Apply pending migrations at startup. */
  MIGRATE_ON_START: bool.default(true),
};

/**
 * Variables that turn tracing on (docs/operations.md, Traces). The OpenTelemetry SDK reads these
 * and the other standard OTEL_* variables itself; Herald reads them only to know whether to start
 * it.
 */
export const tracingEnv = {
  /** OTLP/HTTP endpoint (base URL; the SDK appends /v1/traces). Unset: no tracing, no SDK. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']).optional(),
  /** OTLP/HTTP endpoint of traces alone (the full URL), instead of the one above. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(['http:', 'https:']).optional(),
  /** true: no tracing, whatever the endpoint. */
  OTEL_SDK_DISABLED: bool.default(false),
  /** The service's name in its spans (default: herald-ingest, herald-delivery, herald). */
  OTEL_SERVICE_NAME: z.string().optional(),
};

/** Variables of the services that read from a replica (read, ingest and the single process). */
export const replicaEnv = {
  /**
   * PostgreSQL URL of one streaming replica of DATABASE_URL's server: GET /items and the reads
   * that tolerate lag go there (docs/operations.md, Read replicas). Unset: every read goes to
   * DATABASE_URL. Needs DATABASE_URL.
   */
  READ_DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
};

/** Variables of the HTTP services (ingest, read, and the single-process mode). */
export const httpEnv = {
  /** Port to listen on (0 = any free port). */
  PORT: int(0, 65_535).default(3000),
  /** Address to bind. */
  HOST: z.string().default('0.0.0.0'),
  /** Admin bootstrap token (≥ 24 characters), stored at start beside the other tokens. */
  HERALD_ADMIN_TOKEN: z.string().min(24, 'must be at least 24 characters').optional(),
  /** Largest accepted JSON body. */
  HTTP_BODY_LIMIT_BYTES: int(1024, 100 * 1024 * 1024).default(5 * 1024 * 1024),
  /** Rate-limit window (docs/api.md, Rate limits: 3 seconds). */
  RATE_LIMIT_WINDOW_MS: int(100, 3_600_000).default(3000),
  /** Requests per window per admin token (DatoCMS uses 60). */
  RATE_LIMIT_ADMIN: int(1, 10_000_000).default(100_000),
  /** Requests per window per read_only token. */
  RATE_LIMIT_READ_ONLY: int(1, 10_000_000).default(100_000),
  /** Requests per window per producer token. */
  RATE_LIMIT_PRODUCER: int(1, 10_000_000).default(100_000),
  /** Requests per window per client address without a valid token. */
  RATE_LIMIT_ANONYMOUS: int(1, 10_000_000).default(300),
  /**
   * How long a verified token is trusted before it is looked up again: the delay before a token
   * changed by another process applies here.
   */
  AUTH_CACHE_TTL_MS: int(0, 600_000).default(5000),
  /**
   * Share (0 to 1) of successful POST /events answers written to the access log: the hot route
   * may log a sample. Error answers are always logged.
   */
  ACCESS_LOG_SAMPLE_EVENTS: z.coerce.number().min(0).max(1).default(1),
  /**
   * Base of `doc_url` in error envelopes (`<DOCS_URL>#<CODE>`). Unset: each process's own
   * GET /docs/errors at the address the client used (docs/errors.md served as HTML).
   */
  DOCS_URL: z.string().min(1).optional(),
};
