import type { Db, PostgresOptions } from '@herald/store';

/** A migrated database of a test's own, and how to drop it. */
export interface TestDb {
  db: Db;
  /** The schema holding this test's tables (Postgres only). */
  schema?: string;
  /**
   * Another pool on this database and schema, closed by the caller: a second session or a second
   * process's pool. One connection unless `options` say otherwise.
   */
  connect(options?: Omit<PostgresOptions, 'connectionString' | 'searchPath'>): Db;
  cleanup(): Promise<void>;
}
