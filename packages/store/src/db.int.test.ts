import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  TEST_DATABASE_URL,
  createTestDb,
  testAttempt,
  testItemEvent,
  testWebhookInput,
} from '@herald/testkit';
import {
  createPostgresDb,
  createWebhookCalls,
  findEvents,
  insertEvents,
  insertWebhook,
  recordWebhookCallAttempts,
  type NamedStatement,
  type Queryable,
} from '@herald/store';

const STORE = new URL('../dist/index.js', import.meta.url).href;

/**
 * Runs the scenario in a child process: a lost connection that nothing listens for is an
 * unhandled 'error' event, which kills the process it happens in (exit code 1), whatever the
 * code awaiting the transaction does. The child prints each case's outcome as one JSON line.
 */
function runScenario(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `
    import net from 'node:net';
    import { createPostgresDb, isDbUnavailableError } from ${JSON.stringify(STORE)};
    const url = process.env.DATABASE_URL;
    const db = createPostgresDb({ connectionString: url, maxConnections: 2 });
    const admin = createPostgresDb({ connectionString: url, maxConnections: 1 });
    const pidOf = async (tx) => (await tx.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const alive = async (pid) =>
      (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount > 0;
    const terminate = async (pid) => {
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      while (await alive(pid)) await new Promise((resolve) => setImmediate(resolve));
    };
    const outcome = (promise) =>
      promise.then(
        () => 'committed',
        (error) => (isDbUnavailableError(error) ? 'unavailable' : 'other: ' + error.message),
      );
    const results = {};
    // The backend is terminated while the transaction waits between two queries: the client is
    // idle in the transaction when the server's error and the socket's end arrive.
    results.betweenQueries = await outcome(
      db.transaction(async (tx) => {
        const pid = await pidOf(tx);
        await terminate(pid);
        // Round trips on another connection, so the dead socket is read before the next query.
        for (let i = 0; i < 3; i++) await admin.query('SELECT 1');
        await tx.query('SELECT 1');
      }),
    );
    // The backend is terminated while a query runs.
    results.duringQuery = await outcome(
      db.transaction(async (tx) => {
        const pid = await pidOf(tx);
        // Handled from the start: it may fail before the line that awaits it runs.
        const running = tx.query('SELECT pg_sleep(30)').then(
          () => undefined,
          (error) => error,
        );
        while (
          (await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", [pid]))
            .rowCount === 0
        ) {
          await new Promise((resolve) => setImmediate(resolve));
        }
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        const error = await running;
        if (error) throw error;
      }),
    );
    // The transaction's own code wraps the query's error in one of its own.
    results.wrapped = await outcome(
      db.transaction(async (tx) => {
        const pid = await pidOf(tx);
        await terminate(pid);
        try {
          await tx.query('SELECT 1');
        } catch {
          throw new Error('could not store the batch');
        }
      }),
    );
    // The pool discarded the broken clients and keeps working.
    results.afterwards = await outcome(
      db.transaction(async (tx) => {
        await tx.query('SELECT 1');
      }),
    );
    results.query = (await db.query('SELECT 41 + 1 AS n')).rows[0].n;
    // The backend is terminated as the connection opens: a proxy hands the client the server's
    // error in the same read as the handshake's end, before the transaction can listen on the
    // client it is given.
    const fatal = (() => {
      const fields = ['SFATAL', 'VFATAL', 'C57P01', 'Mterminating connection due to administrator command'];
      const body = Buffer.concat([...fields.map((f) => Buffer.from(f + '\\0')), Buffer.from([0])]);
      const head = Buffer.alloc(5);
      head.write('E', 0);
      head.writeInt32BE(body.length + 4, 1);
      return Buffer.concat([head, body]);
    })();
    const target = new URL(url);
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.pipe(upstream);
      let read = Buffer.alloc(0);
      upstream.on('data', (chunk) => {
        read = Buffer.concat([read, chunk]);
        for (let at = 0; read.length - at >= 5; ) {
          const length = read.readInt32BE(at + 1);
          if (read.length - at < 1 + length) return;
          const type = String.fromCharCode(read[at]);
          at += 1 + length;
          if (type !== 'Z') continue;
          // ReadyForQuery: the handshake's end, and the error right behind it.
          client.end(Buffer.concat([read.subarray(0, at), fatal]));
          upstream.destroy();
          return;
        }
      });
    });
    await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.address().port);
    const opening = createPostgresDb({ connectionString: proxied.toString(), maxConnections: 1 });
    results.atHandshake = await outcome(opening.transaction((tx) => tx.query('SELECT 1')));
    await opening.close();
    proxy.close();
    process.stdout.write(JSON.stringify(results) + '\\n');
    await db.close();
    await admin.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env['PATH'] ?? '', DATABASE_URL: TEST_DATABASE_URL },
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('a Postgres connection lost inside a transaction', () => {
  it('rejects the transaction as unavailable, keeps the process alive and the pool working', async () => {
    const { code, stdout, stderr } = await runScenario();
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      betweenQueries: 'unavailable',
      duringQuery: 'unavailable',
      wrapped: 'unavailable',
      afterwards: 'committed',
      query: 42,
      atHandshake: 'unavailable',
    });
  });
});

describe('statements planned once per connection (planOnce)', () => {
  const mode = {
    name: 'test.plan_cache_mode',
    text: "SELECT current_setting('plan_cache_mode') || ' ' || current_setting('enable_seqscan') AS mode",
  };
  const modeOf = async (db: Queryable, statement: string | NamedStatement) =>
    (await db.query<{ mode: string }>(statement)).rows[0]!.mode;

  it('run on the plan-once pool, with force_generic_plan and no seq scans; everything else as before', async () => {
    const db = createPostgresDb({
      connectionString: TEST_DATABASE_URL,
      maxConnections: 1,
      planOncePoolSize: 1,
    });
    const plain = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
    try {
      expect(await modeOf(db, { ...mode, planOnce: true })).toBe('force_generic_plan off');
      expect(await modeOf(db, mode)).toBe('auto on');
      expect(await modeOf(db, mode.text)).toBe('auto on');
      // A transaction keeps its connection; a pool without the share runs them as any statement.
      expect(await db.transaction((tx) => modeOf(tx, { ...mode, planOnce: true }))).toBe('auto on');
      expect(await modeOf(plain, { ...mode, planOnce: true })).toBe('auto on');
    } finally {
      await db.close();
      await plain.close();
    }
  });

  it('never compile themselves: no JIT where enable_seqscan=off prices a one-row scan at 10^10', async () => {
    // The match's read of its events also reads the one-row webhooks_generation, which has no index
    // to take instead: its scan's price crosses jit_above_cost. With JIT on, a server built with
    // LLVM (Debian's) spent ~250 ms compiling each run of a 0.1 ms probe.
    const t = await createTestDb('postgres');
    const db = t.connect({ planOncePoolSize: 1 });
    try {
      const { rows } = await db.query<{ 'QUERY PLAN': [Record<string, unknown>] }>({
        name: 'test.find-to-match.explain',
        text: `EXPLAIN (ANALYZE, FORMAT JSON) SELECT id, (SELECT generation FROM webhooks_generation)
                 FROM events WHERE id = ANY(ARRAY['plan-once-jit'])`,
        planOnce: true,
      });
      const plan = rows[0]!['QUERY PLAN'][0];
      expect((plan['Plan'] as { 'Total Cost': number })['Total Cost']).toBeGreaterThan(1e9);
      expect(plan).not.toHaveProperty('JIT');
    } finally {
      await db.close();
      await t.cleanup();
    }
  });

  it("are the delivery workers' hot statements: an event's read, its calls, its outcome", async () => {
    const t = await createTestDb('postgres');
    try {
      const asked: { name: string; planOnce: boolean }[] = [];
      const recording: Queryable = {
        query: (statement, params) => {
          if (typeof statement !== 'string') {
            asked.push({ name: statement.name, planOnce: statement.planOnce === true });
          }
          return t.db.query(statement, params);
        },
      };
      const webhook = await insertWebhook(t.db, testWebhookInput());
      const event = testItemEvent('plan-once-1');
      await insertEvents(t.db, [event]);
      await findEvents(recording, [event.id]);
      const [call] = await createWebhookCalls(recording, [{ event, webhookIds: [webhook.id] }]);
      await recordWebhookCallAttempts(recording, [
        {
          id: call!.id,
          attempt: testAttempt({ durationMs: 1 }),
        },
      ]);
      expect(asked.map((a) => a.name.replace(/\.\d{4}_\d{2}$/, '.<month>'))).toEqual([
        'herald.events.find',
        'herald.webhook_calls.create.<month>',
        'herald.webhook_calls.record_attempts.<month>',
      ]);
      expect(asked.every((a) => a.planOnce)).toBe(true);
    } finally {
      await t.cleanup();
    }
  });
});
