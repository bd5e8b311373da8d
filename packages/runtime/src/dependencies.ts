import { errorMessage } from '@herald/contract';
import { isDbUnavailableError, sqlState, type Db } from '@herald/store';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from './logger.js';

// What Herald says when Redis or Postgres is missing: a reason in its own words with what to
// check (the log, /readyz, the single process's banner), and at most one log line per cause
// every 10 s however many connections, queues and workers report it.

/** The shortest time between two log lines of one cause. */
const LOG_INTERVAL_MS = 10_000;

/** When each cause was last logged, and how many reports were held back since. */
const logged = new Map<string, { at: number; held: number }>();

/**
 * Warns with `cause` as the message at most once per 10 s in this process; the next line after a
 * quiet spell says how many reports it held back (`repeated`). Process-wide on purpose: a Redis
 * outage is reported by every connection, queue and worker of the process at once.
 */
export function warnOncePerCause(
  logger: Logger,
  cause: string,
  fields: Record<string, unknown> = {},
): void {
  const now = performance.now();
  const last = logged.get(cause);
  if (last && now - last.at < LOG_INTERVAL_MS) {
    last.held++;
    return;
  }
  if (logged.size >= 1000) {
    for (const [key, entry] of logged) if (now - entry.at >= LOG_INTERVAL_MS) logged.delete(key);
  }
  logged.set(cause, { at: now, held: 0 });
  logger.warn(last?.held ? { ...fields, repeated: last.held } : fields, cause);
}

/** The error's code, or that of an error it wraps (an AggregateError's first). */
function errorCode(error: unknown): string | undefined {
  const { code, errors } = (error ?? {}) as { code?: unknown; errors?: unknown };
  if (typeof code === 'string') return code;
  return Array.isArray(errors) ? errorCode(errors[0]) : undefined;
}

/** What a failed connection attempt says, in words; undefined for anything else. */
function connectionFailure(error: unknown): string | undefined {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : '';
  if (code === 'ECONNREFUSED') return 'is not answering (connection refused)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return `cannot be found (the host name does not resolve: ${code})`;
  }
  if (code === 'ETIMEDOUT' || /timed? ?out/i.test(message)) {
    return 'is not answering (the connection timed out)';
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    return `is not reachable from here (${code})`;
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || /connection (is )?closed/i.test(message)) {
    return 'closed the connection';
  }
  return undefined;
}

/** A Redis client's last connection error (kept by createRedis until it is ready again). */
const lastRedisErrors = new WeakMap<Redis | Cluster, Error>();

export function rememberRedisError(redis: Redis | Cluster, error: Error | undefined): void {
  if (error) lastRedisErrors.set(redis, error);
  else lastRedisErrors.delete(redis);
}

/** A cluster client's seed nodes, as it was configured (createRedisCluster). */
const clusterSeeds = new WeakMap<Cluster, string>();

export function rememberClusterSeeds(
  cluster: Cluster,
  nodes: readonly { host: string; port: number }[],
): void {
  clusterSeeds.set(cluster, nodes.map(({ host, port }) => `${host}:${port}`).join(','));
}

/** "Redis at host:port" (or "Redis Cluster at host:port,…", its seeds), as configured. */
export function redisAddress(redis: Redis | Cluster): string {
  const seeds = clusterSeeds.get(redis as Cluster);
  if (seeds !== undefined) return `Redis Cluster at ${seeds}`;
  const { host, port } = (redis as Redis).options;
  return `Redis at ${host ?? 'localhost'}:${port ?? 6379}`;
}

/**
 * What is wrong with Redis, in Herald's words: "Redis at 127.0.0.1:6390 is not answering
 * (connection refused); check that it runs and that REDIS_URL points at it". Without an error,
 * the client's last connection error, or its state. A cluster's client names REDIS_CLUSTER_NODES.
 */
export function redisProblem(
  redis: Redis | Cluster,
  error: unknown = lastRedisErrors.get(redis),
): string {
  const cluster = clusterSeeds.has(redis as Cluster);
  // A cluster's node error names the node it is about.
  const node = cluster ? target(error) : '';
  const where = node ? `Redis Cluster node${node}` : redisAddress(redis);
  const setting = cluster ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
  const message = errorMessage(error);
  if (/WRONGPASS|NOAUTH|invalid password|AUTH failed/i.test(message)) {
    return `${where} refused the credentials (${message}); check the user and password in ${setting}`;
  }
  const failure = connectionFailure(error);
  if (failure) return `${where} ${failure}; check that it runs and that ${setting} points at it`;
  if (error === undefined) {
    return `${where} is not connected yet (${redis.status}); check that it runs and that ${setting} points at it`;
  }
  return `${where} answered with an error: ${message}`;
}

/** Where a connection error says it tried to connect. */
function target(error: unknown): string {
  const { address, port, hostname } = (error ?? {}) as {
    address?: unknown;
    port?: unknown;
    hostname?: unknown;
  };
  const host = typeof address === 'string' ? address : typeof hostname === 'string' ? hostname : '';
  if (!host) return '';
  return typeof port === 'number' ? ` at ${host}:${port}` : ` at ${host}`;
}

/**
 * What is wrong with Postgres, in Herald's words: "Postgres at 127.0.0.1:5499 is not answering
 * (connection refused); check that it runs and that DATABASE_URL points at it".
 */
export function postgresProblem(error: unknown): string {
  const where = `Postgres${target(error)}`;
  const message = errorMessage(error);
  const state = sqlState(error);
  if (state === '28P01' || state === '28000') {
    return `${where} refused the login (${message}); check the user and password in DATABASE_URL`;
  }
  if (state === '3D000') {
    return `${where} has no such database (${message}); check the database name in DATABASE_URL`;
  }
  if (state === '57P03') return `${where} is starting up or shutting down (${message})`;
  const failure = connectionFailure(error);
  if (failure) return `${where} ${failure}; check that it runs and that DATABASE_URL points at it`;
  if (isDbUnavailableError(error)) {
    return `${where} is unavailable (${message}); check that it runs and that DATABASE_URL points at it`;
  }
  return `the database answered with an error: ${message}`;
}

/**
 * Resolves once the database answers. Until then each failure is logged (warnOncePerCause) and
 * passed to `onWaiting`; the pause between tries grows from 250 ms to 5 s. Once `stopping()`
 * (a shutdown began) it never resolves: the shutdown ends the process.
 */
export async function waitForDatabase(
  db: Db,
  logger: Logger,
  stopping: () => boolean,
  onWaiting: (problem: string) => void = () => undefined,
): Promise<void> {
  let pauseMs = 250;
  let waited = false;
  for (;;) {
    try {
      await db.query('SELECT 1');
      if (waited) logger.info('the database answers: starting');
      return;
    } catch (error) {
      if (stopping()) return new Promise<never>(() => undefined);
      const problem = postgresProblem(error);
      warnOncePerCause(logger, problem, { err: errorMessage(error) });
      onWaiting(problem);
      waited = true;
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    pauseMs = Math.min(pauseMs * 2, 5000);
  }
}

/**
 * Resolves once the Redis client is ready. Until then its connection errors (each logged by
 * createRedis's listener) are passed to `onWaiting` as Herald's reason.
 */
export function redisReady(
  redis: Redis | Cluster,
  onWaiting: (problem: string) => void = () => undefined,
): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const onError = (error: Error): void => onWaiting(redisProblem(redis, error));
    redis.on('error', onError);
    redis.once('ready', () => {
      redis.off('error', onError);
      resolve();
    });
    if (lastRedisErrors.has(redis)) onWaiting(redisProblem(redis));
  });
}
