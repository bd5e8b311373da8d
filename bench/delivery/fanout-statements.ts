/**
 * What the workers' two statements of a fan-out cost, per call, in this process and in Postgres:
 * the calls of a request's events (createWebhookCalls: 250 events × 10 webhooks, as
 * `bench:delivery`'s fan-out rows post and match them) and their outcomes (recordWebhookCallAttempts,
 * without rollups as the workers write them, in batches of 500 as their BatchWriter does), one
 * statement at a time on one connection. This process's CPU (process.cpuUsage: the parameters'
 * serialization and the rows' parsing) and the backend's (/proc, 10 ms ticks summed over the run)
 * are read around each statement. `bench:delivery` shows where they sit in the whole; this shows
 * them alone, where a change to either moves well outside the noise of the whole.
 *
 *   pnpm build && tsc -p bench && node bench/dist/delivery/fanout-statements.js   (BATCHES=12)
 */
import {
  createWebhookCalls,
  insertEvents,
  insertWebhook,
  recordWebhookCallAttempts,
  type NewWebhookCall,
  type WebhookCallAttempt,
} from '@herald/store';
import { createTestDb, testAttempt, testItemEvent } from '@herald/testkit';
import { processCpuMs } from '../lib/cpu.js';
import { table } from '../lib/table.js';
import { itemWebhook } from './fixtures.js';

const BATCHES = Number(process.env['BATCHES'] ?? 12);
const EVENTS_PER_BATCH = 250;
const FANOUT = 10;
const MODELS = 10;
const OUTCOMES_PER_STATEMENT = 500;

/** An outcome as an attempt of the fan-out writes it: a success, its request's 935 B body. */
const attemptOf = (call: NewWebhookCall): WebhookCallAttempt =>
  testAttempt({
    requestUrl: call.webhook!.url,
    requestHeaders: {
      'content-type': 'application/json',
      'user-agent': 'Herald (bench)',
      'webhook-id': call.id,
      'webhook-timestamp': '1795000000',
      'webhook-signature': '[REDACTED]',
      authorization: '[REDACTED]',
      'x-bench': 'herald',
    },
    requestPayload: JSON.stringify({
      webhook_call_id: call.id,
      event_type: 'publish',
      entity_type: 'item',
      entity: { id: call.eventId, type: 'item', attributes: { title: 'a "quoted" title' } },
      padding: 'x'.repeat(700),
    }),
    responseHeaders: { 'content-length': '2', date: new Date().toUTCString() },
    responsePayload: 'ok',
    durationMs: 3.2,
  });

const cpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function main(): Promise<void> {
  const testDb = await createTestDb('postgres');
  const db = testDb.connect();
  try {
    const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0]!.pid;
    const webhooks = new Map<number, string[]>();
    for (let m = 0; m < MODELS; m++) {
      const ids: string[] = [];
      for (let k = 0; k < FANOUT; k++) {
        const input = itemWebhook('http://127.0.0.1:9', `b-${m}-${k}`, ['publish'], m);
        ids.push((await insertWebhook(testDb.db, input)).id);
      }
      webhooks.set(m, ids);
    }
    const spent = { create: { node: 0, postgres: 0 }, record: { node: 0, postgres: 0 } };
    let calls = 0;
    const measure = async <T>(into: { node: number; postgres: number }, run: () => Promise<T>) => {
      const node = cpuMicros();
      const backend = processCpuMs(pid);
      const result = await run();
      into.node += cpuMicros() - node;
      into.postgres += (processCpuMs(pid) - backend) * 1000;
      return result;
    };
    for (let b = -1; b < BATCHES; b++) {
      // Batch -1 warms up (plans, caches), unmeasured.
      const events = Array.from({ length: EVENTS_PER_BATCH }, (_, i) =>
        testItemEvent(`evt-${b + 1}-${i}`, {
          eventType: 'publish',
          itemTypeId: `model-${i % MODELS}`,
          entityId: `rec-${b + 1}-${i}`,
        }),
      );
      await insertEvents(testDb.db, events);
      const matches = events.map((event, i) => ({
        event,
        webhookIds: webhooks.get(i % MODELS)!,
      }));
      const created = { node: 0, postgres: 0 };
      const recorded = { node: 0, postgres: 0 };
      const made = await measure(created, () => createWebhookCalls(db, matches, 'bench'));
      for (let i = 0; i < made.length; i += OUTCOMES_PER_STATEMENT) {
        const outcomes = made
          .slice(i, i + OUTCOMES_PER_STATEMENT)
          .map((call) => ({ id: call.id, attempt: attemptOf(call) }));
        await measure(recorded, () => recordWebhookCallAttempts(db, outcomes, undefined, false));
      }
      if (b < 0) continue;
      calls += made.length;
      for (const [into, from] of [
        [spent.create, created],
        [spent.record, recorded],
      ] as const) {
        into.node += from.node;
        into.postgres += from.postgres;
      }
    }
    const per = (micros: number) => (micros / calls).toFixed(1);
    process.stdout.write(
      [
        `The fan-out's statements: ${BATCHES} requests of ${EVENTS_PER_BATCH} events, each event to ${FANOUT} webhooks (${calls} calls), the calls made in one statement per request and their outcomes recorded ${OUTCOMES_PER_STATEMENT} per statement, one statement at a time on one connection. CPU µs per call: this process (process.cpuUsage) and the backend (/proc, 10 ms ticks).`,
        '',
        table(
          ['statement', 'this process µs per call', 'Postgres µs per call'],
          [
            ['the calls (createWebhookCalls)', per(spent.create.node), per(spent.create.postgres)],
            [
              'the outcomes (recordWebhookCallAttempts)',
              per(spent.record.node),
              per(spent.record.postgres),
            ],
          ],
        ),
        '',
      ].join('\n'),
    );
  } finally {
    await db.close();
    await testDb.cleanup();
  }
}

await main();
