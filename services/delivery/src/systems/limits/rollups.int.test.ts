import { describe, expect, it } from 'vitest';
import { insertWebhook, readWebhookStats, type Db } from '@herald/store';
import { silentLogger, testWebhookInput } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import { AttemptRollups } from './rollups.js';

const t = suiteTestDb();

/** The real database, whose next `failures` statements fail as when Postgres is away. */
function flaky(db: Db, failures: number): Db {
  let left = failures;
  const wrapped: Db = Object.create(db) as Db;
  wrapped.query = (...args: Parameters<Db['query']>) => {
    if (left-- > 0) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
    return db.query(...args);
  };
  return wrapped;
}

describe('AttemptRollups', () => {
  it('writes what it gathered, and keeps it for the next time when the write fails', async () => {
    const webhook = await insertWebhook(t.db, testWebhookInput());
    const rollups = new AttemptRollups(
      flaky(t.db, 1),
      silentLogger(),
      { failures: 0, cooldownMs: 0 },
      60_000,
    );
    const attempt = (status: 'success' | 'failed') => ({
      webhookId: webhook.id,
      status,
      lastSentAt: new Date(),
      durationMs: 12,
      tripsCircuit: status === 'failed',
    });
    rollups.add([attempt('success'), attempt('failed')]);
    await rollups.flush(); // the database is away: nothing written, nothing lost
    const attempts = async () => (await readWebhookStats(t.db, '1h', [webhook.id]))[0]!.totals;
    expect((await attempts()).attemptsSuccess).toBe(0);
    rollups.add([attempt('success')]);
    await rollups.stop(); // back: everything gathered goes at once
    expect(await attempts()).toMatchObject({ attemptsSuccess: 2, attemptsFailure: 1 });
  });
});
