import { z } from 'zod';
import { commonEnv, httpEnv, openReplicaDb, parseEnv, replicaEnv } from '@herald/runtime';
import { createPostgresDb, type Db } from '@herald/store';
import type { ReadLimits } from './read-gate.js';

/** The read service's own variables (beside commonEnv and httpEnv). */
export const readEnv = {
  // Build a per-model expression index the first time a listing filters or sorts on a field
  // (CREATE INDEX CONCURRENTLY, in the background). "false" when the database user may not
  // create indexes, or to manage them by hand.
  READ_EXPRESSION_INDEXES: z
    .enum(['true', 'false'])
    .default('true')
    .transform((value) => value === 'true'),
  // Time budget of each SQL statement of GET /items and GET /items/:id: Postgres cancels it past
  // this and the request answers 422 QUERY_TIMEOUT. 0: no budget. Needs DATABASE_URL (PGlite
  // has no timer to cancel a statement with).
  READ_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(5000),
  // A token's share of the read pool: statements of one token that run at once per process.
  // Further ones wait their turn, at most twice READ_STATEMENT_TIMEOUT_MS, then 429. Keep it
  // below DB_POOL_SIZE so that one client never holds every connection.
  READ_MAX_STATEMENTS_PER_TOKEN: z.coerce.number().int().min(1).max(500).default(5),
  // With READ_DATABASE_URL: how long a read given X-Herald-Read-After waits for the replica to
  // replay that far before it reads the primary instead. 0: the replica is asked once, not waited for.
  READ_AFTER_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(500),
};

export const ReadConfig = z.object({
  ...commonEnv,
  ...httpEnv,
  ...replicaEnv,
  ...readEnv,
});
export type ReadConfig = z.infer<typeof ReadConfig>;

export function loadConfig(env: Readonly<Record<string, string | undefined>>): ReadConfig {
  return parseEnv(ReadConfig, env);
}

/** The gate's limits from the configuration (see ReadGate). */
export function readLimits(
  config: Pick<ReadConfig, 'READ_STATEMENT_TIMEOUT_MS' | 'READ_MAX_STATEMENTS_PER_TOKEN'>,
  readDb: Db,
): ReadLimits {
  return {
    statementsPerToken: config.READ_MAX_STATEMENTS_PER_TOKEN,
    // PGlite cannot cancel a running statement: no budget to speak of there.
    statementTimeoutMs: readDb.kind === 'postgres' ? config.READ_STATEMENT_TIMEOUT_MS : 0,
  };
}

/**
 * The read routes' databases: with Postgres, a pool of its own whose statements Postgres cancels
 * past READ_STATEMENT_TIMEOUT_MS (auth, health checks and index builds stay on the service's
 * pool, without a budget, and slow reads cannot take their connections), and one such pool on
 * the replica of READ_DATABASE_URL if set; with PGlite, `db`.
 */
export function openReadDb(
  config: Pick<
    ReadConfig,
    'DATABASE_URL' | 'READ_DATABASE_URL' | 'DB_POOL_SIZE' | 'READ_STATEMENT_TIMEOUT_MS'
  >,
  db: Db,
  applicationName: string,
): { db: Db; replica: Db | undefined; close(): Promise<void> } {
  const replica = openReplicaDb(
    config,
    `${applicationName}-replica`,
    config.READ_STATEMENT_TIMEOUT_MS,
  );
  if (db.kind !== 'postgres' || !config.DATABASE_URL) {
    return { db, replica, close: async () => replica?.close() };
  }
  const readDb = createPostgresDb({
    connectionString: config.DATABASE_URL,
    maxConnections: config.DB_POOL_SIZE,
    applicationName,
    statementTimeoutMs: config.READ_STATEMENT_TIMEOUT_MS,
  });
  return {
    db: readDb,
    replica,
    close: async () => {
      await Promise.all([readDb.close(), replica?.close()]);
    },
  };
}
