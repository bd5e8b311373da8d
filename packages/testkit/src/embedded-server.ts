import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@herald/store';
import { fileEndTasks } from './file-end.js';

/**
 * The embedded PostgreSQL that tests with `db: 'embedded'` share in this test process: started
 * (initdb in a temporary folder, seconds) by the first of them, and kept while the file runs, so
 * that a file whose every test takes a database of its own starts one server, not one a test.
 * Stopped and deleted when the file ends (fileEndTasks), so that a file leaves no process behind.
 */
let shared: { server: Promise<EmbeddedPostgres>; dir: Promise<string>; users: number } | undefined;

async function stopShared(): Promise<void> {
  const current = shared;
  shared = undefined;
  fileEndTasks.delete('embedded-postgres');
  if (!current) return;
  try {
    await (await current.server).stop();
  } finally {
    await rm(await current.dir, { recursive: true, force: true });
  }
  // A test database still held at the file's end is a leaked fixture: fail the file for it.
  if (current.users > 0) throw new Error(`${current.users} embedded test databases not released`);
}

export async function acquireEmbeddedServer(): Promise<{
  url: string;
  release(): Promise<void>;
}> {
  if (!shared) {
    const dir = mkdtemp(join(tmpdir(), 'herald-test-embedded-'));
    shared = {
      dir,
      server: dir.then((d) => startEmbeddedPostgres({ dir: join(d, 'postgres') })),
      users: 0,
    };
    fileEndTasks.set('embedded-postgres', stopShared);
  }
  const current = shared;
  current.users++;
  let server: EmbeddedPostgres;
  try {
    server = await current.server;
  } catch (error) {
    current.users--;
    if (shared === current) await stopShared().catch(() => undefined);
    throw error;
  }
  let released = false;
  return {
    url: server.url,
    release() {
      if (!released) current.users--;
      released = true;
      return Promise.resolve();
    },
  };
}
