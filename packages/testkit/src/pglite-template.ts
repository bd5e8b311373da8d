import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPgliteDb, migrate } from '@herald/store';
import type { TestDb } from './test-db.js';

/**
 * PGlite data folders made once per test run and copied for each database a test opens: a new
 * PGlite cluster runs initdb in WASM (seconds of CPU; 0.2 s for the migrations after it), a copy
 * opens in a fraction of that. `empty` is a cluster as initdb leaves it, for the tests of the
 * migrations themselves; `migrated` has every migration applied by `migrate`.
 */
export type PgliteTemplate = 'empty' | 'migrated';

/** Set by the global setup (vitest-global-setup) to the folder that holds this run's templates. */
export const PGLITE_TEMPLATES_ENV = 'HERALD_TEST_PGLITE_TEMPLATES';

const run = promisify(execFile);

/** Makes both templates in `dir` (each in a subfolder named after it). */
export async function createPgliteTemplates(dir: string): Promise<void> {
  const empty = await createPgliteDb({ dataDir: join(dir, 'empty') });
  await empty.close();
  // A copy of the empty one, migrated: one initdb for both.
  await copyDir(join(dir, 'empty'), join(dir, 'migrated'));
  const migrated = await createPgliteDb({ dataDir: join(dir, 'migrated') });
  await migrate(migrated);
  await migrated.close();
}

let ownTemplates: Promise<string> | undefined;

/**
 * The run's templates; without the global setup (a file run by another config), this process's
 * own, made at the first call and deleted when it exits.
 */
function templatesDir(): Promise<string> {
  const dir = process.env[PGLITE_TEMPLATES_ENV];
  if (dir) return Promise.resolve(dir);
  ownTemplates ??= (async () => {
    const own = await mkdtemp(join(tmpdir(), 'herald-pglite-templates-'));
    process.once('exit', () => rmSync(own, { recursive: true, force: true }));
    await createPgliteTemplates(own);
    return own;
  })();
  return ownTemplates;
}

/**
 * Copies a template to `dataDir` (which must not exist yet): a PGlite data folder to open with
 * createPgliteDb, or to give a Herald process as `$HERALD_DATA_DIR/pgdata`.
 */
export async function copyPgliteTemplate(
  dataDir: string,
  template: PgliteTemplate = 'migrated',
): Promise<void> {
  await copyDir(join(await templatesDir(), template), dataDir);
}

/** cp(1): a template is forty megabytes (half of it the first WAL segment); fs.cp takes far more CPU. */
async function copyDir(from: string, to: string): Promise<void> {
  await run('cp', ['-R', from, to]);
}

/** A PGlite database of its own, in a temporary folder copied from a template. */
export async function createPgliteTestDb(template: PgliteTemplate = 'migrated'): Promise<TestDb> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-pglite-'));
  try {
    await copyPgliteTemplate(join(dir, 'pgdata'), template);
    const db = await createPgliteDb({ dataDir: join(dir, 'pgdata') });
    return {
      db,
      async cleanup() {
        await db.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
