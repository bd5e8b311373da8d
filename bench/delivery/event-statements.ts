/**
 * What the workers' per-event statements cost Postgres for a single event (issue #16: one event
 * per request), one at a time on one connection, the backend's CPU read from /proc: the match's
 * read of the event (findEvents) and its call (createWebhookCalls), and the outcome's write
 * (recordWebhookCallAttempts, without rollups, as the workers write it). Each is run on two
 * connections, alternating every 50 events: one with Postgres's default plan cache (a prepared
 * statement is planned again at every execution while its generic plan looks dearer than a
 * custom one), one with `plan_cache_mode = force_generic_plan` (planned once per connection).
 * The difference is the planning each execution pays. Beside them, a primary-key read of a call
 * (the floor of a statement's cost), and the outcome's write as it was before issue #16: through
 * the log's partitioned parents (recordWebhookCallAttempts writes the call's month's partitions
 * directly, and falls back to that statement when the month is gone; the bench takes its text
 * from that fallback).
 *
 *   pnpm build && tsc -p bench && node bench/dist/delivery/event-statements.js   (EVENTS=3000)
 */
import {
  createWebhookCalls,
  findEvents,
  insertEvents,
  insertWebhook,
  recordWebhookCallAttempts,
  type Db,
  type WebhookCallAttempt,
} from '@herald/store';
import { createTestDb, testItemEvent, testWebhookInput } from '@herald/testkit';
import { processCpuMs } from '../lib/cpu.js';
import { table } from '../lib/table.js';

const EVENTS = Number(process.env['EVENTS'] ?? 3000);
const STEPS = [
  'find the event',
  'create its call',
  "record the call's attempt",
  'read a call by id',
  "record the call's attempt through the partitioned parents (before #16)",
];

interface Connection {
  mode: string;
  db: Db;
  pid: number;
  /** Backend CPU by step, ms. */
  cpu: number[];
  events: number;
}

/** The attempt an outcome writes: a success with a 1 kB request body. */
const attempt = (): WebhookCallAttempt => ({
  status: 'success',
  requestUrl: 'http://127.0.0.1:9/hook',
  requestHeaders: { 'content-type': 'application/json' },
  requestPayload: JSON.stringify({ data: 'x'.repeat(1000) }),
  responseStatus: 200,
  responseHeaders: { 'content-length': '2' },
  responsePayload: 'ok',
  failureReason: null,
  attemptedAutoRetriesCount: 0,
  lastSentAt: new Date(),
  nextRetryAt: null,
  trigger: 'first',
  durationMs: 3,
  tripsCircuit: false,
});

/** The outcome statement through the partitioned parents: the fallback's text and parameters. */
async function parentStatement(
  id: string,
): Promise<{ name: string; text: string; values: readonly unknown[] }> {
  let captured: { text: string; values: readonly unknown[] } | undefined;
  const missing = Object.assign(new Error('no partition'), { code: '42P01' });
  let first = true;
  const capture = {
    transaction: () => Promise.reject(new Error('not used')),
    query: (statement: string | { text: string }, values?: readonly unknown[]) => {
      if (first) {
        first = false;
        return Promise.reject(missing);
      }
      captured = {
        text: typeof statement === 'string' ? statement : statement.text,
        values: values ?? [],
      };
      return Promise.resolve({ rows: [], rowCount: 0 });
    },
  } as unknown as Db;
  await recordWebhookCallAttempts(capture, [{ id, attempt: attempt() }], undefined, false);
  return { name: 'bench.record_attempts_through_parents', ...captured! };
}

const auto0 = (connections: readonly Connection[]): Connection => connections[0]!;

async function main(): Promise<void> {
  const testDb = await createTestDb('postgres');
  const connections: Connection[] = [];
  try {
    for (const mode of ['auto', 'force_generic_plan']) {
      const db = testDb.connect();
      await db.query(`SET plan_cache_mode = ${mode}`);
      const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      connections.push({ mode, db, pid: rows[0]!.pid, cpu: STEPS.map(() => 0), events: 0 });
    }
    const webhook = await insertWebhook(testDb.db, testWebhookInput());
    const second = await insertWebhook(testDb.db, testWebhookInput());
    const events = Array.from({ length: EVENTS }, (_, i) => testItemEvent(`evt-${i}`));
    for (let i = 0; i < EVENTS; i += 500) {
      await insertEvents(testDb.db, events.slice(i, i + 500));
    }
    const step = async <T>(c: Connection, n: number, run: () => Promise<T>): Promise<T> => {
      const before = processCpuMs(c.pid);
      const result = await run();
      c.cpu[n]! += processCpuMs(c.pid) - before;
      return result;
    };
    for (const [i, event] of events.entries()) {
      const c = connections[Math.floor(i / 50) % connections.length]!;
      await step(c, 0, () => findEvents(c.db, [event.id]));
      const [call] = await step(c, 1, () =>
        createWebhookCalls(c.db, [{ event, webhookIds: [webhook.id] }], 'bench'),
      );
      await step(c, 2, () =>
        recordWebhookCallAttempts(c.db, [{ id: call!.id, attempt: attempt() }], undefined, false),
      );
      await step(c, 3, () => c.db.query('SELECT * FROM webhook_calls WHERE id = $1', [call!.id]));
      // A second call of the event (another webhook) for the outcome through the parents.
      const { rows: other } = await testDb.db.query<{ id: string }>(
        `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type)
         VALUES ($1, $2, 'item', 'update') RETURNING id`,
        [event.id, second.id],
      );
      const parent = await parentStatement(other[0]!.id);
      await step(c, 4, () => c.db.query({ name: parent.name, text: parent.text }, parent.values));
      c.events++;
    }
    // How each prepared statement was planned on the default connection: a statement that stays
    // on custom plans is planned again at every execution.
    const { rows: plans } = await auto0(connections).db.query<{
      name: string;
      generic_plans: string;
      custom_plans: string;
    }>('SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name');
    const per = (c: Connection, n: number) => ((c.cpu[n]! * 1000) / c.events).toFixed(0);
    const [auto, generic] = connections as [Connection, Connection];
    const sum = (c: Connection) => c.cpu.slice(0, 3).reduce((a, b) => a + b, 0);
    process.stdout.write(
      [
        `The workers' statements for a single event, one at a time on one connection: ${EVENTS} events, one webhook, each event found, given its call, and the call's attempt recorded; alternately on a connection with the default plan cache and one with plan_cache_mode = force_generic_plan (backend CPU, /proc, 10 ms ticks summed over the events)`,
        '',
        table(
          ['statement', 'default plan cache: µs per event', 'force_generic_plan: µs per event'],
          [
            ...STEPS.slice(0, 4).map((name, n) => [name, per(auto, n), per(generic, n)]),
            [
              'the three statements of an event',
              ((sum(auto) * 1000) / auto.events).toFixed(0),
              ((sum(generic) * 1000) / generic.events).toFixed(0),
            ],
            [STEPS[4]!, per(auto, 4), per(generic, 4)],
          ],
        ),
        '',
        table(
          ['prepared statement (default plan cache)', 'generic plans', 'custom plans'],
          plans.map((p) => [p.name, p.generic_plans, p.custom_plans]),
        ),
        '',
      ].join('\n'),
    );
  } finally {
    for (const c of connections) await c.db.close();
    await testDb.cleanup();
  }
}

await main();
