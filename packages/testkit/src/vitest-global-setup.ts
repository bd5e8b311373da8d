import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGLITE_TEMPLATES_ENV, createPgliteTemplates } from './pglite-template.js';

/**
 * vitest's globalSetup entry: the PGlite templates, made once before the test workers start (they
 * inherit the variable that says where) and deleted after the last test file.
 */
export default async function setup(): Promise<() => Promise<void>> {
  // Each project runs its global setup: the first one makes the templates for all.
  if (process.env[PGLITE_TEMPLATES_ENV]) return () => Promise.resolve();
  const dir = await mkdtemp(join(tmpdir(), 'herald-pglite-templates-'));
  try {
    await createPgliteTemplates(dir);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  process.env[PGLITE_TEMPLATES_ENV] = dir;
  return () => rm(dir, { recursive: true, force: true });
}
