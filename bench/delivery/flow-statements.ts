/**
 * What flow control's per-call statements cost Postgres, one at a time on one connection (the
 * backend's CPU read from /proc), for calls of a per_entity webhook placed as the match places
 * them: CALLS records, each with a call that goes and one parked behind it. The outcome of each
 * first call releases the second; the bench measures, on alternate halves of the records:
 * - as migration 023 shipped: the released call's claim (herald_claim_flow_call), then its
 *   outcome's transaction: lock the lane, write, release the next call;
 * - since migration 024: the outcome's transaction alone (write, then a release that claims the
 *   call for the process that holds it: no claim statement, no lock before the write).
 * Beside them, a primary-key read of a call (the floor of a statement's cost).
 *
 *   pnpm build && tsc -p bench && node bench/dist/delivery/flow-statements.js   (CALLS=2000)
 */
import pg from 'pg';
import { processCpuMs } from '../lib/cpu.js';
import {
  createWebhookCalls,
  findEvents,
  insertEvents,
  insertWebhook,
  placeFlowCalls,
} from '@herald/store';
import { TEST_DATABASE_URL, createTestDb, testItemEvent, testWebhookInput } from '@herald/testkit';

const CALLS = Number(process.env['CALLS'] ?? 2000);

async function main(): Promise<void> {
  const testDb = await createTestDb('postgres');
  const client = new pg.Client({
    connectionString: TEST_DATABASE_URL,
    options: `-c search_path=${testDb.schema!}`,
  });
  await client.connect();
  try {
    const webhook = await insertWebhook(
      testDb.db,
      testWebhookInput({ deliveryOrder: 'per_entity' }),
    );
    // Each record's version 1 (goes) and version 2 (parked behind it).
    const base = Date.now() - 60_000;
    const events = Array.from({ length: 2 * CALLS }, (_, i) => {
      const record = i % CALLS;
      const version = i < CALLS ? 1 : 2;
      return testItemEvent(`evt-${i}`, {
        entityId: `rec-${record}`,
        occurredAt: new Date(base + i),
        entity: { type: 'item', id: `rec-${record}`, meta: { current_version: String(version) } },
      });
    });
    for (let i = 0; i < events.length; i += 1000) {
      await insertEvents(testDb.db, events.slice(i, i + 1000));
    }
    const stored = new Map(
      (
        await findEvents(
          testDb.db,
          events.map((e) => e.id),
        )
      ).map((e) => [e.id, e]),
    );
    const ready: string[] = [];
    for (let i = 0; i < events.length; i += 500) {
      const slice = events.slice(i, i + 500);
      await testDb.db.transaction(async (tx) => {
        const made = await createWebhookCalls(
          tx,
          slice.map((e) => ({ event: stored.get(e.id)!, webhookIds: [webhook.id] })),
        );
        const placed = await placeFlowCalls(
          tx,
          made.map((c) => ({ id: c.id, webhook: c.webhook!, event: stored.get(c.eventId)! })),
        );
        ready.push(...placed.ready);
      });
    }
    await client.query('ANALYZE webhook_calls');

    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0]!.pid;
    /**
     * Runs the steps for every id, in order; each step's backend CPU and wall time per id, in
     * µs (the CPU read from /proc in 10 ms ticks, summed over the calls).
     */
    const measure = async (ids: string[], steps: ((id: string) => Promise<unknown>)[]) => {
      for (const id of ids.slice(0, 50)) for (const step of steps) await step(id); // warm-up
      const rest = ids.slice(50);
      const cpu = steps.map(() => 0);
      const wall = steps.map(() => 0);
      for (const id of rest) {
        for (const [i, step] of steps.entries()) {
          const before = processCpuMs(pid);
          const started = performance.now();
          await step(id);
          wall[i]! += performance.now() - started;
          cpu[i]! += processCpuMs(pid) - before;
        }
      }
      return steps.map((_, i) => ({
        cpu: (cpu[i]! * 1000) / rest.length,
        wall: (wall[i]! * 1000) / rest.length,
      }));
    };
    const q = (name: string, text: string, value: (id: string) => unknown) => (id: string) =>
      client.query({ name, text, values: [value(id)] });
    // The ready calls in two halves, alternately, each half with one variant of the functions.
    const halves = [ready.filter((_, i) => i % 2 === 0), ready.filter((_, i) => i % 2 === 1)];
    const [read] = await measure(ready, [
      q('read', 'SELECT * FROM webhook_calls WHERE id = $1', (id) => id),
    ]);
    const claim = q('claim', 'SELECT * FROM herald_claim_flow_call($1, true, 17000)', (id) => id);
    const write = q(
      'write',
      `UPDATE webhook_calls SET status = 'success', held_by = NULL WHERE id = $1`,
      (id) => id,
    );
    const release = (holder: string | null) => (id: string) =>
      client.query({
        name: `release-${holder}`,
        text: 'SELECT * FROM herald_release_flow_lanes($1::bigint[], $2)',
        values: [[id], holder],
      });
    const begin = () => client.query('BEGIN');
    const commit = () => client.query('COMMIT');
    const lock = q('lock', 'SELECT herald_lock_flow_lanes($1::bigint[])', (id) => [id]);
    const before = await measure(halves[0]!, [claim, begin, lock, write, release(null), commit]);
    const since = await measure(halves[1]!, [begin, write, release('bench'), commit]);
    const cell = (r: { cpu: number; wall: number } | undefined) =>
      r ? `${r.cpu.toFixed(0)} | ${r.wall.toFixed(0)}` : '– | –';
    const total = (r: { cpu: number; wall: number }[]) => ({
      cpu: r.reduce((sum, x) => sum + x.cpu, 0),
      wall: r.reduce((sum, x) => sum + x.wall, 0),
    });
    const rows2: [
      string,
      (typeof before)[number] | undefined,
      (typeof since)[number] | undefined,
    ][] = [
      ['claim: SELECT * FROM herald_claim_flow_call($1, true, busy_ms)', before[0], undefined],
      ['outcome: BEGIN', before[1], since[0]],
      ['outcome: SELECT herald_lock_flow_lanes($1::bigint[])', before[2], undefined],
      [
        "outcome: UPDATE webhook_calls SET status = 'success' WHERE id = $1 (the attempt's write, reduced)",
        before[3],
        since[1],
      ],
      [
        'outcome: SELECT * FROM herald_release_flow_lanes($1::bigint[], holder)',
        before[4],
        since[2],
      ],
      ['outcome: COMMIT', before[5], since[3]],
    ];
    process.stdout.write(
      [
        `Flow control's statements per released call, one at a time on one connection: ${CALLS} records, each with a call that goes and one parked behind it (per_entity); half the records as migration 023 shipped (the released call claims, the outcome locks its lane first), half since 024 (the release claims it)`,
        '',
        '| statement | migration 023: backend CPU µs per call | wall µs | since 024: CPU µs | wall µs |',
        '|---|---:|---:|---:|---:|',
        `| baseline: SELECT * FROM webhook_calls WHERE id = $1 | ${cell(read)} | | |`,
        ...rows2.map(([name, b, a]) => `| ${name} | ${cell(b)} | ${cell(a)} |`),
        `| claim and outcome | ${cell(total(before))} | ${cell(total(since))} |`,
        '',
      ].join('\n'),
    );
  } finally {
    await client.end();
    await testDb.cleanup();
  }
}

await main();
