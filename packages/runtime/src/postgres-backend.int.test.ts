import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPostgresDb } from '@herald/store';
import { TEST_DATABASE_URL, waitFor } from '@herald/testkit';
import { RecheckingPostgresConnection } from './postgres-backend.js';

describe("the queues' PostgreSQL connection", () => {
  it('outlives a checked-out client whose backend is terminated between two statements', async () => {
    const connection = new RecheckingPostgresConnection({ connectionString: TEST_DATABASE_URL });
    const admin = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
    const client = await connection.pool.connect();
    try {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Between two statements: no query is running when the server ends the connection.
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await waitFor(async () => {
        await expect(client.query('SELECT 1')).rejects.toThrow();
      });
    } finally {
      client.release(true);
      await connection.close();
      await admin.close();
    }
  });

  it('outlives a terminated LISTEN client, which listens for errors from its construction on', async () => {
    const connection = new RecheckingPostgresConnection({ connectionString: TEST_DATABASE_URL });
    const admin = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
    // BullMQ builds the worker's LISTEN client from this module and listens only after connect().
    const { pgModule } = connection as unknown as { pgModule: { Client: typeof pg.Client } };
    const client = new pgModule.Client({ connectionString: TEST_DATABASE_URL });
    expect(client.listenerCount('error')).toBeGreaterThan(0);
    try {
      await client.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await waitFor(async () => {
        await expect(client.query('SELECT 1')).rejects.toThrow();
      });
    } finally {
      await client.end().catch(() => undefined);
      await connection.close();
      await admin.close();
    }
  });
});
