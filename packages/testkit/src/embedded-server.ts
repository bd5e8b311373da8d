import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@herald/store';

/**
 * The embedded PostgreSQL that tests with `db: 'embedded'` share in this test process: started
 * (initdb in a temporary folder) by the first of them, stopped and deleted when the last one has
 * released it, so that a file leaves no process behind.
 */
let shared: { server: Promise<EmbeddedPostgres>; dir: Promise<string>; users: number } | undefined;

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
  }
  const current = shared;
  current.users++;
  let server: EmbeddedPostgres;
  try {
    server = await current.server;
  } catch (error) {
    if (--current.users === 0 && shared === current) shared = undefined;
    throw error;
  }
  return {
    url: server.url,
    async release() {
      if (--current.users > 0) return;
      if (shared === current) shared = undefined;
      await server.stop();
      await rm(await current.dir, { recursive: true, force: true });
    },
  };
}
