/**
 * What flow control's per-call statements cost Postgres, one at a time on one connection (the
 * backend's CPU read from /proc): an attempt's claim (herald_claim_flow_call) and an outcome's
 * lock, write and release (recordFlowOutcomes' transaction), for calls of a per_entity webhook
 * placed as the match places them: CALLS records, each with a call that goes and one parked
 * behind it. Beside them, in the same run on the same calls: a primary-key read of a call (the
 * floor of a statement's cost), and the same functions with `plan_cache_mode =
 * force_custom_plan` (copies made for this run only), which migration 023 first set and no longer
 * does: re-planning each statement at every call cost about half their CPU.
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

    // The copies that plan every statement at every call (the lock function by call ids too).
    for (const [name, args] of [
      ['herald_claim_flow_call', 3],
      ['herald_release_flow_lanes', 2],
      ['herald_lock_flow_lanes', 1],
    ] as const) {
      const { rows } = await client.query<{ def: string }>(
        `SELECT pg_get_functiondef(p.oid) AS def FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE p.proname = $1 AND n.nspname = $2 AND p.pronargs = $3`,
        [name, testDb.schema!, args],
      );
      const def = rows[0]!.def.replace(
        /FUNCTION [^(]+\(/,
        `FUNCTION ${testDb.schema!}.${name}_custom(`,
      );
      await client.query(
        def.replace(
          /\nAS \$function\$/,
          "\n SET plan_cache_mode TO 'force_custom_plan'\nAS $function$",
        ),
      );
    }

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
    const variant = (suffix: string) =>
      measure(halves[suffix ? 1 : 0]!, [
        // An attempt's claim
        q(
          `claim${suffix}`,
          `SELECT * FROM herald_claim_flow_call${suffix}($1, true, 17000)`,
          (id) => id,
        ),
        // Its outcome: lock the lane, write the call's success, release the next call.
        () => client.query('BEGIN'),
        q(`lock${suffix}`, `SELECT herald_lock_flow_lanes${suffix}($1::bigint[])`, (id) => [id]),
        q('write', `UPDATE webhook_calls SET status = 'success' WHERE id = $1`, (id) => id),
        q(
          `release${suffix}`,
          `SELECT * FROM herald_release_flow_lanes${suffix}($1::bigint[])`,
          (id) => [id],
        ),
        () => client.query('COMMIT'),
      ]);
    const shipped = await variant('');
    const custom = await variant('_custom');
    const cell = (r: { cpu: number; wall: number } | undefined) =>
      `${r!.cpu.toFixed(0)} | ${r!.wall.toFixed(0)}`;
    const names = [
      'claim: SELECT * FROM herald_claim_flow_call($1, true, busy_ms)',
      'outcome: BEGIN',
      'outcome: SELECT herald_lock_flow_lanes($1::bigint[])',
      "outcome: UPDATE webhook_calls SET status = 'success' WHERE id = $1 (the attempt's write, reduced)",
      'outcome: SELECT * FROM herald_release_flow_lanes($1::bigint[])',
      'outcome: COMMIT',
    ];
    const total = (r: { cpu: number; wall: number }[]) => ({
      cpu: r.reduce((sum, x) => sum + x.cpu, 0),
      wall: r.reduce((sum, x) => sum + x.wall, 0),
    });
    process.stdout.write(
      [
        `Flow control's statements, one at a time on one connection: ${CALLS} records, each with a call that goes and one parked behind it (per_entity); half the calls with migration 023's functions, half with copies planning each statement at every call (force_custom_plan)`,
        '',
        '| statement | backend CPU µs per call, migration 023 | wall µs | with force_custom_plan: CPU µs | wall µs |',
        '|---|---:|---:|---:|---:|',
        `| baseline: SELECT * FROM webhook_calls WHERE id = $1 | ${cell(read)} | | |`,
        ...names.map((name, i) => `| ${name} | ${cell(shipped[i])} | ${cell(custom[i])} |`),
        `| claim and outcome | ${cell(total(shipped))} | ${cell(total(custom))} |`,
        '',
      ].join('\n'),
    );
  } finally {
    await client.end();
    await testDb.cleanup();
  }
}

await main();
