import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, testWebhookInput, type TestDb } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import {
  LATENCY_BOUNDS_MS,
  STATS_WINDOWS,
  claimCircuitProbe,
  deleteOldWebhookStats,
  disableFailingWebhooks,
  emitNotices,
  findWebhook,
  listOpenCircuits,
  insertWebhook,
  latencyPercentile,
  readDeliveryHealth,
  readWebhookStats,
  recordWebhookCallAttempts,
  type CircuitSettings,
  type Db,
  type StatsWindow,
  type WebhookCallAttempt,
} from '@herald/store';

/** A small deterministic generator (mulberry32): the history is the same at every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Generated {
  webhookId: string;
  status: WebhookCallAttempt['status'];
  at: Date;
  durationMs: number;
}

const slotOf = (ms: number): number => {
  const i = LATENCY_BOUNDS_MS.findIndex((bound) => ms < bound);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
};

let made = 0;

/** New calls of `webhookId` (each with an event of its own), not attempted yet; their ids. */
async function insertCalls(db: Db, webhookId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const eventId = `attempted-${++made}`;
    await db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity) VALUES ($1, 'main', true, 'item', 'update', $1, now(), '{}')`,
      [eventId],
    );
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type)
       VALUES ($1, $2, 'item', 'update') RETURNING id`,
      [eventId, webhookId],
    );
    ids.push(rows[0]!.id);
  }
  return ids;
}

/**
 * One new call of `webhookId` per result (an HTTP status, or no answer), their attempts recorded
 * in one batch, in order: start times strictly increase, the order the runs are counted in.
 */
async function recordResults(
  db: Db,
  webhookId: string,
  results: readonly (number | 'timeout')[],
  circuit?: CircuitSettings,
): Promise<void> {
  const ids = await insertCalls(db, webhookId, results.length);
  const start = Date.now();
  const batch = results.map((result, i) => {
    const ok = typeof result === 'number' && result < 300;
    return {
      id: ids[i]!,
      attempt: {
        status: ok ? ('success' as const) : ('failed' as const),
        trigger: 'first' as const,
        durationMs: 5,
        tripsCircuit: result === 'timeout' || result >= 500 || result === 429,
        requestUrl: 'http://receiver.test/hook',
        requestHeaders: {},
        requestPayload: '{}',
        responseStatus: typeof result === 'number' ? result : null,
        responseHeaders: null,
        responsePayload: null,
        failureReason: ok ? null : String(result),
        attemptedAutoRetriesCount: 0,
        lastSentAt: new Date(start + ++made),
        nextRetryAt: null,
      },
    };
  });
  await recordWebhookCallAttempts(db, batch, circuit);
}

describe('webhook stats: rollups kept as attempts are recorded', () => {
  let t: TestDb;
  let webhooks: string[];
  const history: Generated[] = [];

  beforeAll(async () => {
    t = await createTestDb('postgres');
    webhooks = [];
    for (let i = 0; i < 3; i++) webhooks.push((await insertWebhook(t.db, testWebhookInput())).id);
    // A fourth, never attempted.
    webhooks.push((await insertWebhook(t.db, testWebhookInput())).id);
    const next = random(1405);
    const now = Date.now();
    // Attempts from 40 days ago to a minute ago: every window, and beyond the longest.
    const ages = [40 * 86_400_000, 20 * 86_400_000, 3 * 86_400_000, 20 * 3_600_000, 3_000_000];
    for (let i = 0; i < 400; i++) {
      const span = ages[Math.floor(next() * ages.length)]!;
      const outcome = next();
      history.push({
        webhookId: webhooks[Math.floor(next() * 3)]!,
        status: outcome < 0.6 ? 'success' : outcome < 0.85 ? 'rescheduled' : 'failed',
        at: new Date(now - 60_000 - Math.floor(next() * span)),
        durationMs: Math.round(next() ** 3 * 40_000 * 10) / 10,
      });
    }
    // The last attempts of the first webhook fail: its streak.
    for (let i = 0; i < 4; i++) {
      history.push({
        webhookId: webhooks[0]!,
        status: 'rescheduled',
        at: new Date(now - 30_000 + i * 1000),
        durationMs: 30_000 + i,
      });
    }
    history.sort((a, b) => a.at.getTime() - b.at.getTime());
    // One call per attempt, recorded in batches of random size, in time order.
    const { rows: events } = await t.db.query<{ id: string }>(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity)
       SELECT 'stats-' || n, 'main', true, 'item', 'update', 'r' || n, now(), '{}'
       FROM generate_series(1, $1) AS n RETURNING id`,
      [history.length],
    );
    const { rows: calls } = await t.db.query<{ id: string }>(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type)
       SELECT e, w, 'item', 'update' FROM unnest($1::text[], $2::bigint[]) AS x (e, w)
       RETURNING id`,
      [events.map((e) => e.id), history.map((h) => h.webhookId)],
    );
    for (let i = 0; i < history.length;) {
      const size = 1 + Math.floor(next() * 20);
      const batch = history.slice(i, i + size).map((h, j) => ({
        id: calls[i + j]!.id,
        attempt: {
          status: h.status,
          trigger: 'first' as const,
          durationMs: h.durationMs,
          tripsCircuit: false,
          requestUrl: 'http://receiver.test/hook',
          requestHeaders: {},
          requestPayload: '{}',
          responseStatus: h.status === 'success' ? 200 : 500,
          responseHeaders: {},
          responsePayload: '',
          failureReason: null,
          attemptedAutoRetriesCount: 0,
          lastSentAt: h.at,
          nextRetryAt: h.status === 'rescheduled' ? new Date(now + 60_000) : null,
        },
      }));
      await recordWebhookCallAttempts(t.db, batch);
      i += size;
    }
  });
  afterAll(() => t.cleanup());

  it.each(Object.keys(STATS_WINDOWS) as StatsWindow[])(
    'equal an independent count of the history over %s',
    async (window) => {
      const all = await readWebhookStats(t.db, window, null);
      expect(all.map((s) => s.webhookId)).toEqual(webhooks);
      for (const stats of all) {
        const mine = history.filter((h) => h.webhookId === stats.webhookId);
        const inWindow = mine.filter((h) => h.at >= stats.from);
        const slots = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
        for (const h of inWindow) slots[slotOf(h.durationMs)]!++;
        expect(stats.totals).toEqual({
          attemptsSuccess: inWindow.filter((h) => h.status === 'success').length,
          attemptsFailure: inWindow.filter((h) => h.status !== 'success').length,
          callsSucceeded: inWindow.filter((h) => h.status === 'success').length,
          callsFailed: inWindow.filter((h) => h.status === 'failed').length,
          latencyBuckets: slots,
          latencyMsSum: expect.closeTo(
            inWindow.reduce((sum, h) => sum + h.durationMs, 0),
            3,
          ) as number,
        });
        // Buckets: whole minutes or hours, each counting the attempts that started in it.
        const unit = STATS_WINDOWS[window].granularity === 'minute' ? 60_000 : 3_600_000;
        const perBucket = new Map<number, number>();
        for (const h of inWindow) {
          const start = Math.floor(h.at.getTime() / unit) * unit;
          perBucket.set(start, (perBucket.get(start) ?? 0) + 1);
        }
        expect(
          new Map(
            stats.buckets.map((b) => [b.start.getTime(), b.attemptsSuccess + b.attemptsFailure]),
          ),
        ).toEqual(perBucket);
        // Percentiles from the ranges; the mean from the sum.
        expect(latencyPercentile(stats.totals.latencyBuckets, 0.5)).toBe(
          latencyPercentile(slots, 0.5),
        );
        const lastSuccess = mine.filter((h) => h.status === 'success').at(-1)?.at ?? null;
        expect(stats.lastSuccessAt).toEqual(lastSuccess);
        expect(stats.lastFailureAt).toEqual(
          mine.filter((h) => h.status !== 'success').at(-1)?.at ?? null,
        );
        expect(stats.failureStreak).toBe(
          mine.filter((h) => h.status !== 'success' && (!lastSuccess || h.at > lastSuccess)).length,
        );
        // Backlog: one call per attempt, so the calls left rescheduled; none pending.
        expect(stats.backlog).toMatchObject({
          pending: 0,
          rescheduled: mine.filter((h) => h.status === 'rescheduled').length,
        });
      }
      // The first webhook's last attempts failed: a streak of at least those four.
      expect(all[0]!.failureStreak).toBeGreaterThanOrEqual(4);
      expect(all[3]!.totals.attemptsSuccess + all[3]!.totals.attemptsFailure).toBe(0);
    },
  );

  it('reads only the webhooks asked for, and none that does not exist', async () => {
    const some = await readWebhookStats(t.db, '24h', [webhooks[1]!, '999999', 'nope']);
    expect(some.map((s) => s.webhookId)).toEqual([webhooks[1]]);
  });

  it('estimates a percentile within its range, null without attempts', () => {
    expect(latencyPercentile([0, 0, 0], 0.5)).toBeNull();
    // 10 attempts in 10–25 ms: the median halfway through the range.
    const slots = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    slots[1] = 10;
    expect(latencyPercentile(slots, 0.5)).toBe(17.5);
    // Above the last bound: the bound.
    slots[LATENCY_BOUNDS_MS.length] = 100;
    expect(latencyPercentile(slots, 0.99)).toBe(LATENCY_BOUNDS_MS.at(-1));
  });

  it('prunes minute buckets after two days and hour buckets after the retention', async () => {
    const count = async (granularity: string, days: number) =>
      Number(
        (
          await t.db.query<{ n: string }>(
            `SELECT count(*) AS n FROM webhook_stats
             WHERE granularity = $1 AND bucket_start < now() - $2 * interval '1 day'`,
            [granularity, days],
          )
        ).rows[0]!.n,
      );
    expect(await count('minute', 2)).toBeGreaterThan(0);
    expect(await count('hour', 31)).toBeGreaterThan(0);
    // Kept forever: only the minutes go.
    await deleteOldWebhookStats(t.db, null);
    expect(await count('minute', 2)).toBe(0);
    expect(await count('hour', 31)).toBeGreaterThan(0);
    await deleteOldWebhookStats(t.db, 86_400_000);
    expect(await count('hour', 31)).toBe(0);
    expect(await count('hour', 1)).toBeGreaterThan(0);
  });
});

describe('the circuit breaker, kept by the statement that records attempts', () => {
  let t: TestDb;
  let webhookId: string;
  const circuit = { failures: 3, cooldownMs: 60_000 };

  beforeAll(async () => {
    t = await createTestDb('postgres');
    webhookId = (await insertWebhook(t.db, testWebhookInput())).id;
  });
  afterAll(() => t.cleanup());

  const record = (...results: (number | 'timeout')[]) =>
    recordResults(t.db, webhookId, results, circuit);
  const state = async () => (await readWebhookStats(t.db, '1h', [webhookId]))[0]!.circuit;
  const expire = () =>
    t.db.query(
      `UPDATE webhook_health SET circuit_open_until = now() - interval '1 second'
       WHERE webhook_id = $1`,
      [webhookId],
    );

  it('opens after a run of failures that say the endpoint is away, never on other answers', async () => {
    await record(503, 'timeout');
    expect(await state()).toMatchObject({ state: 'closed', failures: 2 });
    // A 404 is an answer: the endpoint is there, the run starts over.
    await record(404);
    expect(await state()).toMatchObject({ state: 'closed', failures: 0 });
    await record(429, 500);
    expect(await listOpenCircuits(t.db)).toEqual([]);
    // In another batch, the run goes on: open.
    await record('timeout');
    expect(await state()).toMatchObject({ state: 'open', failures: 3 });
    const [open] = await listOpenCircuits(t.db);
    expect(open!.webhookId).toBe(webhookId);
    expect(open!.waitMs).toBeGreaterThan(55_000);
    expect(open!.waitMs).toBeLessThanOrEqual(60_000);
    // No probe while it cools down.
    expect(await claimCircuitProbe(t.db, webhookId, 10_000)).toBe(false);
  });

  it('lets one probe go after the cool-down: a failure opens it again, a success closes it', async () => {
    await expire();
    expect(await state()).toMatchObject({ state: 'half_open' });
    expect((await listOpenCircuits(t.db))[0]!.waitMs).toBe(0);
    expect(await claimCircuitProbe(t.db, webhookId, 10_000)).toBe(true);
    // Taken: the others wait for its outcome (a claim older than the timeout would be dead).
    expect(await claimCircuitProbe(t.db, webhookId, 10_000)).toBe(false);
    await record(502);
    expect(await state()).toMatchObject({ state: 'open', failures: 4 });
    expect((await listOpenCircuits(t.db))[0]!.waitMs).toBeGreaterThan(55_000);
    await expire();
    expect(await claimCircuitProbe(t.db, webhookId, 10_000)).toBe(true);
    await record(200);
    expect(await state()).toEqual({ state: 'closed', openUntil: null, failures: 0 });
    expect(await listOpenCircuits(t.db)).toEqual([]);
  });

  it('takes over a probe whose process died (its claim older than the timeout)', async () => {
    await record(503, 503, 503);
    await expire();
    expect(await claimCircuitProbe(t.db, webhookId, 10_000)).toBe(true);
    expect(await claimCircuitProbe(t.db, webhookId, 0)).toBe(true);
  });

  it('never opens with a threshold of 0', async () => {
    await record(200);
    await recordResults(t.db, webhookId, [503, 503, 503, 503, 503], {
      failures: 0,
      cooldownMs: 60_000,
    });
    expect(await state()).toMatchObject({ state: 'closed', failures: 5 });
  });
});

describe('sustained failure: a webhook whose attempts all failed for days is disabled', () => {
  let t: TestDb;
  const DAY = 86_400_000;

  beforeAll(async () => {
    t = await createTestDb('postgres');
  });
  afterAll(() => t.cleanup());

  /** A webhook with one call per result (recorded in one batch, in order) and a call waiting. */
  async function webhookWith(...statuses: ('success' | 'failed')[]): Promise<string> {
    const webhookId = (await insertWebhook(t.db, testWebhookInput())).id;
    await recordResults(
      t.db,
      webhookId,
      statuses.map((status) => (status === 'success' ? 200 : 503)),
    );
    await insertCalls(t.db, webhookId, 1);
    return webhookId;
  }
  const failingSince = async (webhookId: string) =>
    (
      await t.db.query<{ since: Date | null }>(
        'SELECT failing_since AS since FROM webhook_health WHERE webhook_id = $1',
        [webhookId],
      )
    ).rows[0]!.since;
  /** As if the run of failures, and the webhook's last edit, were `days` old. */
  const age = async (webhookId: string, days: number, editedDays = days) => {
    await t.db.query(
      `UPDATE webhook_health SET failing_since = failing_since - $2 * interval '1 day'
       WHERE webhook_id = $1`,
      [webhookId, days],
    );
    await t.db.query(
      `UPDATE webhooks SET updated_at = now() - $2 * interval '1 day' WHERE id = $1`,
      [webhookId, editedDays],
    );
  };

  it('keeps when the run of failures began, and forgets it on a success', async () => {
    const failing = await webhookWith('success', 'failed', 'failed');
    const since = await failingSince(failing);
    expect(since).not.toBeNull();
    const recovered = await webhookWith('failed', 'success');
    expect(await failingSince(recovered)).toBeNull();
  });

  it('disables, with its reason, only a webhook failing longer than the limit and not edited since', async () => {
    const dead = await webhookWith('failed', 'failed');
    const edited = await webhookWith('failed');
    const young = await webhookWith('failed');
    const healthy = await webhookWith('failed', 'success');
    await age(dead, 6);
    await age(edited, 6, 1);
    await age(young, 4);
    await age(healthy, 6);

    const disabled = await disableFailingWebhooks(t.db, 5 * DAY);
    expect(disabled.map((w) => w.id)).toEqual([dead]);
    expect(disabled[0]!.reason).toMatch(
      /^every delivery attempt failed since \S+ \(more than 5 days without a success\)$/,
    );
    const webhook = await findWebhook(t.db, dead);
    expect(webhook).toMatchObject({ enabled: false, disabledReason: disabled[0]!.reason });
    // Its waiting call ended, with the reason.
    const { rows } = await t.db.query<{ status: string; failure_reason: string }>(
      'SELECT status, failure_reason FROM webhook_calls WHERE webhook_id = $1 AND last_sent_at IS NULL',
      [dead],
    );
    expect(rows).toEqual([
      { status: 'failed', failure_reason: `the webhook was disabled: ${disabled[0]!.reason}` },
    ]);
    for (const id of [edited, young, healthy]) {
      expect((await findWebhook(t.db, id))?.enabled, id).toBe(true);
    }
    // Told once in a notice, with its reason (the failing ones too, being failing).
    const notices = await emitNotices(t.db, { failingAfter: 1 });
    const { rows: told } = await t.db.query<{ event_type: string; entity: unknown }>(
      `SELECT event_type, entity FROM events WHERE id = ANY($1) AND entity_id = $2`,
      [notices, dead],
    );
    expect(told.map((row) => row.event_type).sort()).toEqual(['disabled', 'failing']);
    expect(told.find((row) => row.event_type === 'disabled')?.entity).toMatchObject({
      attributes: { kind: 'disabled', webhook_id: dead, disabled_reason: disabled[0]!.reason },
    });
    expect(await emitNotices(t.db, { failingAfter: 1 })).toEqual([]);
    // Once disabled, not again; re-enabled (an edit), its clock starts over.
    expect(await disableFailingWebhooks(t.db, 5 * DAY)).toEqual([]);
    await t.db.query('UPDATE webhooks SET enabled = true, updated_at = now() WHERE id = $1', [
      dead,
    ]);
    expect(await disableFailingWebhooks(t.db, 5 * DAY)).toEqual([]);
  });
});

describe("a webhook's own delivery_policy over the deployment's defaults", () => {
  const t = suiteTestDb();

  const failOnce = (webhookId: string, circuit: CircuitSettings) =>
    recordResults(t.db, webhookId, [503], circuit);

  it('opens its circuit at its own threshold, for its own cool-down', async () => {
    const deployment = { failures: 10, cooldownMs: 60_000 };
    const own = await insertWebhook(
      t.db,
      testWebhookInput({ deliveryPolicy: { circuit_failures: 2, circuit_cooldown_ms: 5000 } }),
    );
    const off = await insertWebhook(
      t.db,
      testWebhookInput({ deliveryPolicy: { circuit_failures: 0 } }),
    );
    const plain = await insertWebhook(t.db, testWebhookInput());
    for (let i = 0; i < 2; i++) {
      for (const hook of [own, off, plain]) await failOnce(hook.id, deployment);
    }
    const open = await listOpenCircuits(t.db);
    expect(open.map((c) => c.webhookId)).toEqual([own.id]);
    expect(open[0]!.waitMs).toBeGreaterThan(4000);
    expect(open[0]!.waitMs).toBeLessThanOrEqual(5000);
    for (let i = 0; i < 10; i++) await failOnce(off.id, deployment);
    expect((await listOpenCircuits(t.db)).map((c) => c.webhookId)).toEqual([own.id]);
  });

  it('is disabled after its own time failing, even without a deployment default', async () => {
    const own = await insertWebhook(
      t.db,
      testWebhookInput({ deliveryPolicy: { disable_after_failing_ms: 86_400_000 } }),
    );
    const never = await insertWebhook(
      t.db,
      testWebhookInput({ deliveryPolicy: { disable_after_failing_ms: 0 } }),
    );
    const plain = await insertWebhook(t.db, testWebhookInput());
    for (const hook of [own, never, plain]) {
      await failOnce(hook.id, { failures: 0, cooldownMs: 0 });
      await t.db.query(
        `UPDATE webhook_health SET failing_since = now() - interval '2 days' WHERE webhook_id = $1`,
        [hook.id],
      );
      await t.db.query(`UPDATE webhooks SET updated_at = now() - interval '2 days' WHERE id = $1`, [
        hook.id,
      ]);
    }
    // No deployment default: only its own time applies.
    expect((await disableFailingWebhooks(t.db, null)).map((w) => w.id)).toEqual([own.id]);
    expect((await disableFailingWebhooks(t.db, null)).map((w) => w.id)).toEqual([]);
    // With a default of one day, the plain one follows; the one set to never does not.
    expect((await disableFailingWebhooks(t.db, 86_400_000)).map((w) => w.id)).toEqual([plain.id]);
    expect((await findWebhook(t.db, never.id))?.enabled).toBe(true);
  });
});

describe('the delivery health the alerts read (readDeliveryHealth)', () => {
  let t: TestDb;
  const circuit = { failures: 2, cooldownMs: 60_000 };
  /** What it reads while no enabled webhook is failing. */
  const ALL_HEALTHY = { failing: 0, failingLongestSeconds: 0, circuitOpenLongestSeconds: 0 };

  beforeAll(async () => {
    t = await createTestDb('postgres');
  });
  afterAll(() => t.cleanup());

  /** Moves a webhook's health `minutes` into the past, as if its runs had lasted that long. */
  const age = (webhookId: string, minutes: number) =>
    t.db.query(
      `UPDATE webhook_health SET failing_since = failing_since - $2 * interval '1 minute',
         last_reached_at = last_reached_at - $2 * interval '1 minute'
       WHERE webhook_id = $1`,
      [webhookId, minutes],
    );

  it('is all zeros while every endpoint answers', async () => {
    const healthy = (await insertWebhook(t.db, testWebhookInput())).id;
    await recordResults(t.db, healthy, [200, 200], circuit);
    expect(await readDeliveryHealth(t.db)).toEqual(ALL_HEALTHY);
  });

  it('counts the failing webhooks and how long the longest has failed and been unreached', async () => {
    // Reached once, then every attempt 503 for 20 minutes: failing, circuit open.
    const down = (await insertWebhook(t.db, testWebhookInput())).id;
    await recordResults(t.db, down, [200, 503, 503, 503], circuit);
    await age(down, 20);
    // A 2-minute blip: failing, not yet long; a 404 is an answer, the circuit stays closed.
    const blip = (await insertWebhook(t.db, testWebhookInput())).id;
    await recordResults(t.db, blip, [404], circuit);
    await age(blip, 2);

    const health = await readDeliveryHealth(t.db);
    expect(health.failing).toBe(2);
    // (Attempts are recorded a few ms apart from now: a second's margin.)
    expect(health.failingLongestSeconds).toBeGreaterThan(19 * 60);
    expect(health.failingLongestSeconds).toBeLessThan(21 * 60);
    // Since the 200 that last reached it.
    expect(health.circuitOpenLongestSeconds).toBeGreaterThan(19 * 60);
    expect(health.circuitOpenLongestSeconds).toBeLessThan(21 * 60);

    // The blip heals: one fewer; the outage heals: all zeros again.
    await recordResults(t.db, blip, [200], circuit);
    expect((await readDeliveryHealth(t.db)).failing).toBe(1);
    await recordResults(t.db, down, [200], circuit);
    expect(await readDeliveryHealth(t.db)).toEqual(ALL_HEALTHY);
  });

  it('keeps circuits apart: an endpoint that answers 404 fails with its circuit closed', async () => {
    const answering = (await insertWebhook(t.db, testWebhookInput())).id;
    await recordResults(t.db, answering, [404, 404, 404], circuit);
    await age(answering, 30);
    const health = await readDeliveryHealth(t.db);
    expect(health).toMatchObject({ failing: 1, circuitOpenLongestSeconds: 0 });
    expect(health.failingLongestSeconds).toBeGreaterThan(29 * 60);
    await recordResults(t.db, answering, [200], circuit);
  });

  it('leaves out disabled webhooks', async () => {
    const off = (await insertWebhook(t.db, testWebhookInput())).id;
    await recordResults(t.db, off, [503, 503, 503], circuit);
    expect((await readDeliveryHealth(t.db)).failing).toBe(1);
    await t.db.query('UPDATE webhooks SET enabled = false WHERE id = $1', [off]);
    expect(await readDeliveryHealth(t.db)).toEqual(ALL_HEALTHY);
  });
});
