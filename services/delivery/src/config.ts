import { z } from 'zod';
import { HERALD_USER_AGENT, payloadEnv } from '@herald/payload';
import { commonEnv, httpEnv, parseEnv, ssrfEnv, tracingEnv } from '@herald/runtime';
import { createPostgresDb, type Db } from '@herald/store';
import type { DeliverySettings } from './workers.js';

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** The delivery service's own variables (beside commonEnv). */
export const deliveryEnv = {
  /** SSRF_ALLOW_CIDRS: the blocked ranges are checked on every resolved address at connect time. */
  ...ssrfEnv,
  /** SITE_ID: the payload's `site_id`. */
  ...payloadEnv,
  /** Time allowed to open a connection to a webhook endpoint. */
  DELIVERY_CONNECT_TIMEOUT_MS: int(100, 60_000).default(2000),
  /** Time allowed for a whole delivery attempt (connect, send, answer). */
  DELIVERY_TIMEOUT_MS: int(100, 120_000).default(8000),
  /**
   * Delays between auto retries, comma-separated ms (docs/api.md, What a webhook call sends: 2 min,
   * 6 min, 30 min, 1 h, 5 h, 1 day, 2 days after the previous failure; tests shrink it).
   */
  DELIVERY_RETRY_SCHEDULE_MS: z
    .string()
    .default('120000,360000,1800000,3600000,18000000,86400000,172800000')
    .transform((value, ctx) => {
      const list = value.split(',').map((part) => Number(part.trim()));
      if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 0)) {
        ctx.addIssue({ code: 'custom', message: 'must be comma-separated non-negative integers' });
        return z.NEVER;
      }
      return list;
    }),
  /** Jitter of each retry delay, as a fraction (0.1 = ±10 %). */
  DELIVERY_RETRY_JITTER: z.coerce.number().min(0).max(1).default(0.1),
  /** The longest a Retry-After header may push the next attempt (1 day by default). */
  DELIVERY_RETRY_AFTER_MAX_MS: int(0, 7 * 86_400_000).default(86_400_000),
  /** Deliveries in flight at once per webhook, across all workers (docs/architecture.md). */
  DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: int(1, 10_000).default(10),
  /**
   * The circuit breaker: after this many attempts of a webhook in a row fail with no answer, a
   * timeout, a 5xx or a 429, its calls wait DELIVERY_CIRCUIT_COOLDOWN_MS, then one probe decides
   * whether it closes. 0 turns it off.
   */
  DELIVERY_CIRCUIT_FAILURES: int(0, 1_000_000).default(10),
  /** How long an open circuit keeps a webhook's calls waiting before its probe. */
  DELIVERY_CIRCUIT_COOLDOWN_MS: int(100, 86_400_000).default(60_000),
  /**
   * A webhook whose attempts have all failed for this long (since its last success, and since
   * its last edit) is disabled with a `disabled_reason`, its waiting calls ended. 0: never.
   */
  DELIVERY_DISABLE_AFTER_FAILING_MS: int(0, 365 * 86_400_000).default(5 * 86_400_000),
  /**
   * Failed attempts in a row after which a webhook is told "failing" in a notice (entity type
   * notice; a "recovered" notice follows its next success). 0: no failing or recovered notices.
   */
  DELIVERY_NOTICE_FAILURES: int(0, 1_000_000).default(5),
  /**
   * Bulk jobs (bulk resends, replays) one delivery process runs at once; each job is run by one
   * process, and its attempts share the delivery pool. 0: this process runs none.
   */
  BULK_JOBS_PER_PROCESS: int(0, 100).default(2),
  /** How often a delivery process looks for a bulk job to run (new, or a dead process's). */
  BULK_JOBS_POLL_MS: int(50, 600_000).default(1000),
  /** Concurrent delivery attempts per process (the shared pool). */
  DELIVERY_CONCURRENCY: int(1, 10_000).default(200),
  /** Concurrent event matches per process. */
  MATCH_CONCURRENCY: int(1, 1000).default(20),
  /** Keep-alive sockets per webhook origin. */
  DELIVERY_CONNECTIONS_PER_ORIGIN: int(1, 10_000).default(64),
  /** Largest part of a response body kept in the log. */
  DELIVERY_RESPONSE_MAX_BYTES: int(0, 10 * 1024 * 1024).default(65_536),
  /**
   * BullMQ job lock, renewed every half of it while the worker lives; a job whose worker died
   * runs again within about 1.5 times this.
   */
  DELIVERY_JOB_LOCK_MS: int(1000, 600_000).default(8000),
  /**
   * How long a delivery process's hold on the calls queued in its memory outlives its last
   * heartbeat (renewed every third of it). After a `kill -9` the sweeper takes its calls over once
   * this has passed; a live process's calls are never taken, however long its backlog.
   */
  DELIVERY_LEASE_MS: int(300, 600_000).default(6000),
  /** How often the sweeper looks for work Redis lost (unmatched events, stranded calls). */
  DELIVERY_SWEEP_INTERVAL_MS: int(100, 3_600_000).default(3000),
  /**
   * A call not held by a process and still pending this long after its job was added (or a
   * retry overdue by this long) is re-enqueued by the sweeper (a no-op if its job still exists).
   */
  DELIVERY_SWEEP_AFTER_MS: int(100, 86_400_000).default(60_000),
  /**
   * Days a finished call (success or failed, with its request and response) stays in the delivery
   * log (GET /webhook_calls) at least: the sweeper drops a month of calls once the whole month is
   * older (so at most a month more); 0 keeps calls forever. Calls still pending or rescheduled are
   * never deleted.
   */
  DELIVERY_LOG_RETENTION_DAYS: int(0, 36_500).default(30),
  /** How often the sweeper makes the log's months ahead and drops those past the retention. */
  DELIVERY_LOG_PRUNE_INTERVAL_MS: int(1000, 86_400_000).default(3_600_000),
  /** Full reload period of the in-memory webhook index (changes also arrive over pub/sub). */
  WEBHOOK_INDEX_RELOAD_MS: int(100, 3_600_000).default(30_000),
  /**
   * Whether the workers' Postgres commits wait for the WAL flush. false (default): they don't
   * (`synchronous_commit = off` on the workers' own pool), which removes one fsync per match and per
   * attempt from the hot path. A Postgres crash may then forget the last ~0.6 s of worker commits;
   * that work is redone by the sweeper (a call is sent again: at least once, never lost). Events
   * stored by POST /events always commit synchronously.
   */
  DELIVERY_SYNCHRONOUS_COMMIT: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((value) => value === 'true' || value === '1'),
  /** Events younger than this are left to the ingest request still enqueuing them. */
  EVENT_SWEEP_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
  /** Event ids (and stranded calls) read and enqueued per round trip by the sweeper. */
  EVENT_SWEEP_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(1000),
  /** How long one sweeper enqueue waits for Redis before trying again next interval. */
  EVENT_SWEEP_ENQUEUE_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(5000),
};

export const DeliveryConfig = z.object({
  ...commonEnv,
  ...tracingEnv,
  ...deliveryEnv,
  /** Port of the health and metrics endpoints. */
  PORT: httpEnv.PORT.default(3002),
  HOST: httpEnv.HOST,
  DOCS_URL: httpEnv.DOCS_URL,
});
export type DeliveryConfig = z.infer<typeof DeliveryConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): DeliveryConfig {
  return parseEnv(DeliveryConfig, env);
}

/** The workers' settings from the parsed variables (shared by delivery and the single process). */
export function deliverySettings(
  config: Pick<
    DeliveryConfig,
    keyof typeof deliveryEnv | 'MATCH_JOB_ATTEMPTS' | 'MATCH_JOB_BACKOFF_MS'
  >,
): DeliverySettings {
  return {
    siteId: config.SITE_ID,
    userAgent: HERALD_USER_AGENT,
    allowCidrs: config.SSRF_ALLOW_CIDRS,
    connectTimeoutMs: config.DELIVERY_CONNECT_TIMEOUT_MS,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    connectionsPerOrigin: config.DELIVERY_CONNECTIONS_PER_ORIGIN,
    responseMaxBytes: config.DELIVERY_RESPONSE_MAX_BYTES,
    retry: {
      scheduleMs: config.DELIVERY_RETRY_SCHEDULE_MS,
      jitter: config.DELIVERY_RETRY_JITTER,
      retryAfterMaxMs: config.DELIVERY_RETRY_AFTER_MAX_MS,
    },
    maxInFlightPerWebhook: config.DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK,
    circuit: {
      failures: config.DELIVERY_CIRCUIT_FAILURES,
      cooldownMs: config.DELIVERY_CIRCUIT_COOLDOWN_MS,
    },
    disableAfterFailingMs: config.DELIVERY_DISABLE_AFTER_FAILING_MS || null,
    noticeFailures: config.DELIVERY_NOTICE_FAILURES,
    noticePollMs: 1000,
    bulkJobsPerProcess: config.BULK_JOBS_PER_PROCESS,
    bulkJobsPollMs: config.BULK_JOBS_POLL_MS,
    deliverConcurrency: config.DELIVERY_CONCURRENCY,
    matchConcurrency: config.MATCH_CONCURRENCY,
    matchRetries: { attempts: config.MATCH_JOB_ATTEMPTS, backoffMs: config.MATCH_JOB_BACKOFF_MS },
    jobLockMs: config.DELIVERY_JOB_LOCK_MS,
    leaseMs: config.DELIVERY_LEASE_MS,
    sweepIntervalMs: config.DELIVERY_SWEEP_INTERVAL_MS,
    sweepAfterMs: config.DELIVERY_SWEEP_AFTER_MS,
    eventSweepGraceMs: config.EVENT_SWEEP_GRACE_MS,
    sweepBatchSize: config.EVENT_SWEEP_BATCH_SIZE,
    sweepEnqueueTimeoutMs: config.EVENT_SWEEP_ENQUEUE_TIMEOUT_MS,
    indexReloadMs: config.WEBHOOK_INDEX_RELOAD_MS,
    logRetentionMs:
      config.DELIVERY_LOG_RETENTION_DAYS === 0
        ? null
        : config.DELIVERY_LOG_RETENTION_DAYS * 86_400_000,
    logPruneIntervalMs: config.DELIVERY_LOG_PRUNE_INTERVAL_MS,
  };
}

/**
 * The workers' database. With Postgres, pools of their own: DB_POOL_SIZE connections whose commits
 * wait for the WAL flush only with DELIVERY_SYNCHRONOUS_COMMIT (see the variable), and as many
 * again for the hot statements that are planned once per connection (store, NamedStatement
 * `planOnce`: finding an event, making its calls, recording an outcome). With PGlite, the
 * service's `db`.
 */
export function openWorkerDb(
  config: Pick<DeliveryConfig, 'DATABASE_URL' | 'DB_POOL_SIZE' | 'DELIVERY_SYNCHRONOUS_COMMIT'>,
  db: Db,
): { db: Db; close(): Promise<void> } {
  if (db.kind !== 'postgres' || !config.DATABASE_URL) {
    return { db, close: () => Promise.resolve() };
  }
  const workerDb = createPostgresDb({
    connectionString: config.DATABASE_URL,
    maxConnections: config.DB_POOL_SIZE,
    planOncePoolSize: config.DB_POOL_SIZE,
    applicationName: 'herald-delivery-workers',
    synchronousCommit: config.DELIVERY_SYNCHRONOUS_COMMIT,
  });
  return { db: workerDb, close: () => workerDb.close() };
}
