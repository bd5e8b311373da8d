import { chmod, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { processAlive } from '@herald/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import {
  embeddedPostgresUrlFile,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '@herald/store';

const dirs: string[] = [];
const servers: EmbeddedPostgres[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-embedded-pg-'));
  dirs.push(dir);
  return dir;
}

async function start(dir: string, log?: (message: string) => void): Promise<EmbeddedPostgres> {
  const server = await startEmbeddedPostgres({ dir, ...(log ? { log } : {}) });
  servers.push(server);
  return server;
}

async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  for (const server of servers) await server.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('the embedded PostgreSQL', { timeout: 120_000 }, () => {
  it('makes a cluster, serves several connections with statement budgets, and stops', async () => {
    const dir = await tempDir();
    const messages: string[] = [];
    const server = await start(join(dir, 'postgres'), (m) => messages.push(m));
    expect(messages.join('\n')).toMatch(/making the embedded PostgreSQL cluster/);
    const urlFile = embeddedPostgresUrlFile(join(dir, 'postgres'));
    expect((await readFile(urlFile, 'utf8')).trim()).toBe(server.url);
    expect((await stat(urlFile)).mode & 0o777).toBe(0o600);
    expect(new URL(server.url).hostname).toBe('127.0.0.1');

    // Several clients at once, each its own backend.
    const pool = new pg.Pool({ connectionString: server.url, max: 4 });
    try {
      const pids = await Promise.all(
        [1, 2, 3, 4].map(async () => {
          const client = await pool.connect();
          try {
            await client.query('SELECT pg_sleep(0.05)');
            return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!
              .pid;
          } finally {
            client.release();
          }
        }),
      );
      expect(new Set(pids).size).toBe(4);
      const { rows } = await pool.query<{ version: string; db: string }>(
        'SELECT version(), current_database() AS db',
      );
      expect(rows[0]).toMatchObject({
        version: expect.stringMatching(/^PostgreSQL 18/),
        db: 'herald',
      });
      // Unicode case mapping whatever locales the machine has.
      expect((await pool.query("SELECT upper('é') AS u")).rows[0]).toEqual({ u: 'É' });
    } finally {
      await pool.end();
    }

    // statement_timeout cancels a runaway statement, as on any Postgres.
    const budgeted = new pg.Client({ connectionString: server.url, statement_timeout: 100 });
    await budgeted.connect();
    try {
      const started = Date.now();
      await expect(
        budgeted.query("SELECT 'a' ~ '(a*)*b' FROM generate_series(1, 1e9)"),
      ).rejects.toMatchObject({ code: '57014' });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await budgeted.end();
    }

    await server.stop();
    expect(processAlive(server.pid)).toBe(false);
    await expect(stat(urlFile)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('reaches its data below folders only their owner may enter (a checkout in /root)', async () => {
    // mkdtemp's folder is 0700, as /root is; so is the "home" below it.
    const home = join(await tempDir(), 'home');
    await mkdir(join(home, 'checkout'), { recursive: true, mode: 0o700 });
    await chmod(home, 0o700);
    const server = await start(join(home, 'checkout', '.herald', 'postgres'));
    expect((await query(server.url, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('stops the server a killed Herald left running, and keeps its data', async () => {
    const dir = join(await tempDir(), 'postgres');
    const first = await start(dir);
    await query(first.url, 'CREATE TABLE kept (v text)');
    await query(first.url, "INSERT INTO kept VALUES ('before')");
    // The process that started it is gone without stop(): the server goes on on its own.
    const messages: string[] = [];
    const second = await start(dir, (m) => messages.push(m));
    expect(messages.join('\n')).toContain(`(pid ${first.pid}) left running`);
    expect(processAlive(first.pid)).toBe(false);
    expect(second.pid).not.toBe(first.pid);
    expect((await query(second.url, 'SELECT v FROM kept')).rows).toEqual([{ v: 'before' }]);
    await second.stop();
  });

  it('recovers after its server was killed with SIGKILL', async () => {
    const dir = join(await tempDir(), 'postgres');
    const first = await start(dir);
    await query(first.url, 'CREATE TABLE kept (v text)');
    await query(first.url, "INSERT INTO kept VALUES ('committed')");
    process.kill(first.pid, 'SIGKILL');
    await expect.poll(() => processAlive(first.pid)).toBe(false);

    const second = await start(dir);
    expect((await query(second.url, 'SELECT v FROM kept')).rows).toEqual([{ v: 'committed' }]);
    expect(await readFile(join(dir, 'postgres.log'), 'utf8')).toMatch(
      /database system was interrupted|not properly shut down/,
    );
    await second.stop();
  });
});
