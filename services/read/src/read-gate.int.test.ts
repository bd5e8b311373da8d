import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '@herald/contract';
import { createPostgresDb, type Db } from '@herald/store';
import { TEST_DATABASE_URL } from '@herald/testkit';
import { ReadGate } from './read-gate.js';

let db: Db;

beforeAll(() => {
  db = createPostgresDb({
    connectionString: TEST_DATABASE_URL,
    maxConnections: 4,
    statementTimeoutMs: 300,
  });
});

afterAll(async () => {
  await db.close();
});

const sleep = (seconds: number) => `SELECT pg_sleep(${seconds})`;

describe('ReadGate', () => {
  it('runs at most statementsPerToken statements of one token at once; other tokens do not wait', async () => {
    const gate = new ReadGate(db, { statementsPerToken: 2, statementTimeoutMs: 300 });
    const startedAt = (token: string) =>
      gate
        .forToken(token)
        .query<{ at: Date }>('SELECT clock_timestamp() AS at, pg_sleep(0.1)')
        .then(({ rows }) => rows[0]!.at.getTime());
    const [a1, a2, a3, a4, b1] = await Promise.all(['a', 'a', 'a', 'a', 'b'].map(startedAt));
    // Token a's third and fourth statements waited for its first two; token b's did not.
    const firstWave = Math.min(a1!, a2!);
    expect(Math.min(a3!, a4!)).toBeGreaterThanOrEqual(firstWave + 90);
    expect(b1!).toBeLessThan(firstWave + 90);
  });

  it('answers 429 RATE_LIMIT_EXCEEDED to a statement that waits longer than maxWaitMs', async () => {
    const gate = new ReadGate(db, {
      statementsPerToken: 1,
      statementTimeoutMs: 300,
      maxWaitMs: 50,
    });
    const a = gate.forToken('a');
    const first = a.query(sleep(0.2));
    const error = await a.query('SELECT 1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 429,
      entries: [{ code: 'RATE_LIMIT_EXCEEDED' }],
      headers: { 'Retry-After': '1' },
    });
    await first;
    // The slot is free again.
    await expect(a.query('SELECT 1')).resolves.toMatchObject({ rowCount: 1 });
  });

  it('turns a statement Postgres cancels at statement_timeout into 422 QUERY_TIMEOUT', async () => {
    const gate = new ReadGate(db, { statementsPerToken: 2, statementTimeoutMs: 300 });
    const error = await gate
      .forToken('a')
      .query(sleep(2))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      status: 422,
      entries: [{ code: 'QUERY_TIMEOUT', details: { timeout_ms: 300 } }],
    });
    // Other errors pass through as they are.
    const other = await gate
      .forToken('a')
      .query('SELECT 1/0')
      .catch((e: unknown) => e);
    expect(other).not.toBeInstanceOf(ApiError);
  });
});
