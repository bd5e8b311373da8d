import { createPgliteDb, createPostgresDb, type Db } from './db.js';

export interface OpenDbOptions {
  /** PostgreSQL URL; when absent, the embedded PGlite is used. */
  databaseUrl?: string | undefined;
  /** Where PGlite keeps its files (embedded mode only). */
  dataDir: string;
  maxConnections?: number;
  applicationName?: string;
}

/** Opens Postgres when a URL is configured, else the embedded default (PGlite in dataDir). */
export async function openDb(options: OpenDbOptions): Promise<Db> {
  if (options.databaseUrl) {
    return createPostgresDb({
      connectionString: options.databaseUrl,
      ...(options.maxConnections ? { maxConnections: options.maxConnections } : {}),
      ...(options.applicationName ? { applicationName: options.applicationName } : {}),
    });
  }
  return createPgliteDb({ dataDir: options.dataDir });
}
