import type { Db } from '@herald/store';

/** A migrated database of a test's own, and how to drop it. */
export interface TestDb {
  db: Db;
  /** The schema holding this test's tables (Postgres only). */
  schema?: string;
  cleanup(): Promise<void>;
}
