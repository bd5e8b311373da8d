import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPostgresDb } from '@herald/store';
import { TEST_DATABASE_URL, freePort, randomId } from '@herald/testkit';
import { postgresProblem, redisProblem, warnOncePerCause } from './dependencies.js';
import { createLogger } from './logger.js';
import { createRedis } from './redis.js';

/** The error a query gets from a Postgres at this URL. */
async function queryError(url: string): Promise<unknown> {
  const db = createPostgresDb({ connectionString: url, maxConnections: 1 });
  try {
    return await db.query('SELECT 1').then(
      () => new Error('it answered'),
      (error: unknown) => error,
    );
  } finally {
    await db.close();
  }
}

function withUrl(change: (url: URL) => void): string {
  const url = new URL(TEST_DATABASE_URL);
  change(url);
  return url.toString();
}

describe('what Herald says of a Postgres it cannot use', () => {
  it('names the address, what happened and the setting to check', async () => {
    const port = await freePort();
    expect(postgresProblem(await queryError(`postgres://postgres@127.0.0.1:${port}/test`))).toBe(
      `Postgres at 127.0.0.1:${port} is not answering (connection refused); ` +
        'check that it runs and that DATABASE_URL points at it',
    );
    const role = randomId('nobody');
    expect(postgresProblem(await queryError(withUrl((url) => (url.username = role))))).toBe(
      `Postgres refused the login (role "${role}" does not exist); ` +
        'check the user and password in DATABASE_URL',
    );
    const database = randomId('nowhere');
    expect(postgresProblem(await queryError(withUrl((url) => (url.pathname = database))))).toBe(
      `Postgres has no such database (database "${database}" does not exist); ` +
        'check the database name in DATABASE_URL',
    );
  });
});

describe('what Herald says of a Redis it cannot use', () => {
  it('names the address, what happened and the setting to check', async () => {
    const port = await freePort();
    const redis = createRedis(
      `redis://127.0.0.1:${port}`,
      'producer',
      createLogger({ name: 't', level: 'silent' }),
    );
    try {
      // Before any attempt failed: its state; after, the last error.
      expect(redisProblem(redis)).toMatch(
        new RegExp(`^Redis at 127.0.0.1:${port} is not connected yet`),
      );
      await new Promise((resolve) => redis.once('error', resolve));
      expect(redisProblem(redis)).toBe(
        `Redis at 127.0.0.1:${port} is not answering (connection refused); ` +
          'check that it runs and that REDIS_URL points at it',
      );
    } finally {
      redis.disconnect();
    }
  });
});

describe('warnOncePerCause', () => {
  it('logs a cause once however often it is reported, and each cause on its own', () => {
    const stream = new PassThrough();
    const lines: { msg: string; level: number }[] = [];
    stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    const logger = createLogger({ name: 't', level: 'info', destination: stream });
    const [a, b] = [randomId('cause'), randomId('cause')];
    for (let i = 0; i < 50; i++) warnOncePerCause(logger, a);
    warnOncePerCause(logger, b, { detail: 1 });
    warnOncePerCause(logger, a);
    expect(lines.map((line) => [line.msg, line.level])).toEqual([
      [a, 40],
      [b, 40],
    ]);
  });
});
