import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@herald/store';

/** The embedded PostgreSQL's folder in the data folder: its cluster, password, URL and log. */
export const embeddedPostgresDir = (dataDir: string): string => join(dataDir, 'postgres');

/** Where Herald before #29 kept its PGlite database. */
export const pgliteDir = (dataDir: string): string => join(dataDir, 'pgdata');

/**
 * The data folder holds the PGlite database of a Herald from before the embedded PostgreSQL:
 * starting on an empty database beside it would look like lost data.
 */
export class PgliteFolderError extends Error {
  override name = 'PgliteFolderError';
  constructor(dataDir: string) {
    const folder = pgliteDir(dataDir);
    super(
      `${folder} holds the PGlite database of an earlier Herald; the embedded database is now ` +
        `PostgreSQL itself (in ${embeddedPostgresDir(dataDir)}). Copy it over with one command:\n` +
        `  pnpm herald import-pglite\n` +
        `(it copies every table, then renames ${folder} to ${folder}.imported). To start empty ` +
        `instead, move ${folder} away. Nothing has been changed.`,
    );
  }
}

export async function hasPgliteFolder(dataDir: string): Promise<boolean> {
  return stat(join(pgliteDir(dataDir), 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}

/**
 * The single process's embedded default: PostgreSQL itself, started on the cluster in the data
 * folder. Refuses a data folder that still holds a PGlite database. The caller holds the data
 * folder's lock (pid-lock.ts).
 */
export async function startEmbeddedDatabase(options: {
  dataDir: string;
  port: number;
  log: (message: string) => void;
}): Promise<EmbeddedPostgres> {
  if (await hasPgliteFolder(options.dataDir)) throw new PgliteFolderError(options.dataDir);
  return startEmbeddedPostgres({
    dir: embeddedPostgresDir(options.dataDir),
    port: options.port,
    log: options.log,
  });
}
