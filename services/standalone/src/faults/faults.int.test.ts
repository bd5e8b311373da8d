import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { get } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_INTERVALS,
  FAULT_TIMEOUT_MS,
  INTERVALS,
  IN_FLIGHT_PER_WEBHOOK,
  OUT_DIR,
  RECOVERY_LIMIT_S,
  describeExit,
  formatTable,
  killHeraldProcessesSync,
  runFault,
  type FaultRow,
  type HeraldProcess,
  type Infrastructure,
} from './harness.test-support.js';
import { PrivatePostgres, freePort, waitUntil } from '@herald/testkit';
import { PrivateRedis } from './servers.test-support.js';

// The fault-injection suite (docs/reliability.md): under a steady load of events to a real
// receiver, each fault is injected into built Herald processes running on a Postgres cluster and
// a Redis server of the suite's own; then no accepted event may be lost, duplicates come only
// from calls in flight when something crashed, no process crashes but the one killed, and the
// last delivery comes at most RECOVERY_LIMIT_S after the fault's end. A table of the figures is
// printed at the end and written to .ci/out/faults.md.

const rows: FaultRow[] = [];
let infra: Infrastructure | undefined;

/**
 * If the run stops without afterAll (interrupted: the runner sends its worker SIGTERM, then
 * SIGKILL 500 ms later; or the worker crashes), nothing is left running or on disk.
 */
function cleanUpSync(): void {
  killHeraldProcessesSync();
  if (!infra) return;
  infra.redis.killSync();
  infra.postgres.destroySync();
  for (const dir of infra.tempDirs) rmSync(dir, { recursive: true, force: true });
}
function cleanUpAndExit(signal: NodeJS.Signals): void {
  cleanUpSync();
  process.kill(process.pid, signal);
}
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

beforeAll(async () => {
  const postgres = await PrivatePostgres.create();
  const redis = await PrivateRedis.create().catch(async (error: unknown) => {
    await postgres.destroy();
    throw error;
  });
  infra = { postgres, redis, tempDirs: [] };
  process.once('exit', cleanUpSync);
  for (const signal of SIGNALS) process.once(signal, cleanUpAndExit);
}, 180_000);

afterAll(async () => {
  const intervals = DEFAULT_INTERVALS
    ? "Herald's default intervals"
    : Object.entries(INTERVALS)
        .map(([name, value]) => `${name}=${value}`)
        .join(' ');
  const table = formatTable(rows);
  console.log(`\nFault injection (limit ${RECOVERY_LIMIT_S} s; ${intervals})\n\n${table}\n`);
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(join(OUT_DIR, 'faults.md'), `${table}\n`);
  if (!infra) return;
  await infra.redis.destroy();
  await infra.postgres.destroy();
  for (const dir of infra.tempDirs) await rm(dir, { recursive: true, force: true });
  // Only now: the worker may be told to exit while the lines above run.
  process.removeListener('exit', cleanUpSync);
  for (const signal of SIGNALS) process.removeListener(signal, cleanUpAndExit);
}, 120_000);

const fault = (
  name: string,
  stack: 'split' | 'standalone',
  inject: Parameters<typeof runFault>[4],
  settings?: Parameters<typeof runFault>[5],
): Promise<FaultRow> => runFault(rows, infra!, name, stack, inject, settings);

/** One GET /readyz on a connection of its own: the status, or the error's code. */
function probeReadiness(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = get(`${url}/readyz`, { agent: false, timeout: 2000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * Probes /readyz every 50 ms, each time on a new connection as a load balancer's health check
 * does, until stopped: when it first answered 503, and when a connection was first refused.
 */
function watchReadiness(url: string) {
  let stopped = false;
  const seen: { first503?: number; firstRefused?: number } = {};
  const polling = (async () => {
    while (!stopped) {
      const answer = await probeReadiness(url);
      if (answer === 503) seen.first503 ??= Date.now();
      if (answer === 'ECONNREFUSED') seen.firstRefused ??= Date.now();
      await sleep(50); // the probes' pace
    }
  })();
  return {
    async stop() {
      stopped = true;
      await polling;
      return seen;
    },
  };
}

// Each fault starts its processes afresh, loads, injects, waits for the last delivery: about
// 15–30 s when Herald recovers, up to about 90 s when it does not.
describe('fault injection', { timeout: FAULT_TIMEOUT_MS }, () => {
  // The faults that do not need Redis, in both modes: Redis (REDIS_URL) and Postgres alone
  // (REDIS_URL unset: the queues, slots, limits and channel in Postgres), with the same criteria.
  // Postgres down stops it immediately: the crash recovery empties the coordination's UNLOGGED
  // tables, Postgres alone's counterpart of a Redis that lost its keys. The faults after the loop
  // are Redis's own: on Postgres alone nothing is left to flush or stop, and a deployment on
  // another database has its queues in that database, so it cannot take another's prefix.
  for (const mode of ['redis', 'postgres'] as const) {
    const suffix = mode === 'redis' ? '' : ', Postgres only';
    // An empty variable counts as unset (parseEnv).
    const modeEnv: Record<string, string> = mode === 'redis' ? {} : { REDIS_URL: '' };

    it(`kill -9 of the delivery process${suffix}`, async () => {
      const row = await fault(
        `kill -9 delivery${suffix}`,
        'split',
        async (s) => {
          await s.kill('delivery');
          s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
          s.faultEnded();
          await s.start('delivery');
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });

    it(`kill -9 of the ingest process${suffix}`, async () => {
      const row = await fault(
        `kill -9 ingest${suffix}`,
        'split',
        async (s) => {
          await s.kill('ingest');
          s.faultEnded();
          await s.start('ingest');
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });

    it(`Postgres backends terminated repeatedly${suffix}`, async () => {
      const row = await fault(
        `Postgres backends terminated${suffix}`,
        'split',
        async (s) => {
          let rounds = 0;
          for (let i = 0; i < 10; i++) {
            const terminated = await s.infra.postgres.psql(
              'SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity ' +
                `WHERE datname = '${s.database}' AND pid <> pg_backend_pid()`,
            );
            if (Number(terminated) > 0) rounds++;
            await sleep(300); // the fault's pace
          }
          // Each round may cut calls whose outcome was not yet written: they are sent again.
          s.allowedDuplicates = rounds * IN_FLIGHT_PER_WEBHOOK;
          s.faultEnded();
          if (rounds === 0) s.problems.push('no Herald backend was found to terminate');
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });

    it(`Postgres restarted${suffix}`, async () => {
      const row = await fault(
        `Postgres restarted${suffix}`,
        'split',
        async (s) => {
          await s.infra.postgres.restart();
          s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
          s.faultEnded();
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });

    it(`Postgres down for longer than the match job's whole retry budget${suffix}`, async () => {
      const row = await fault(
        `Postgres down 4 s (> match retries)${suffix}`,
        'split',
        async (s) => {
          await s.infra.postgres.stop('immediate');
          // MATCH_JOB_ATTEMPTS=3 with MATCH_JOB_BACKOFF_MS=100: the budget is well under a second.
          await sleep(4000); // the outage
          await s.infra.postgres.start();
          s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
          s.faultEnded();
          // Whether the outage did outlast the budget: match jobs that ran out of attempts.
          if (mode === 'redis') {
            const failed = await s.infra.redis.cli('ZCARD', `{${s.prefix}}:event-match:failed`);
            s.mark(`event-match jobs failed for good: ${failed}`);
          }
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });

    it(`SIGTERM of ingest under load: readiness 503 first, in-flight requests finish${suffix}`, async () => {
      const row = await fault(
        `SIGTERM ingest under load${suffix}`,
        'split',
        async (s) => {
          const ingest = s.running('ingest');
          const readiness = watchReadiness(ingest.url);
          const signalledAt = Date.now();
          s.mark(`SIGTERM to ${ingest.name}`);
          const exit = await ingest.signal('SIGTERM', 'stop');
          s.mark(`${ingest.name} exited (${describeExit(exit)})`);
          const seen = await readiness.stop();
          if (exit.code !== 0) s.problems.push(`${ingest.name} ended with ${describeExit(exit)}`);
          s.faultEnded();
          const restartedAt = s.faultEndAt!;
          await s.start('ingest');
          s.afterLoad(async () => {
            const shutdown = s.load.outcomes.filter(
              (o) => o.at >= signalledAt && o.sentAt < restartedAt,
            );
            const refusedAt = Math.min(
              seen.firstRefused ?? Infinity,
              ...shutdown.filter((o) => o.outcome === 'ECONNREFUSED').map((o) => o.at),
            );
            // A load balancer needs the 503s for a while (SHUTDOWN_READINESS_DELAY_MS) to stop sending.
            const delayMs = Number(INTERVALS['SHUTDOWN_READINESS_DELAY_MS'] ?? 0);
            if (seen.first503 === undefined) {
              s.problems.push('/readyz never answered 503 between SIGTERM and the exit');
            } else if (refusedAt - seen.first503 < delayMs / 2) {
              s.problems.push(
                `/readyz answered 503 ${refusedAt - seen.first503} ms before connections were ` +
                  `refused (SHUTDOWN_READINESS_DELAY_MS=${delayMs})`,
              );
            }
            // A connection the kernel still had queued when the listener closed, or a keep-alive one
            // closed idle as the request went out, is reset (or closed: undici's UND_ERR_SOCKET)
            // rather than refused: the request never reached Herald, which its event not being
            // stored shows (a request cut after Herald took it would have it stored). The producer
            // sends it again, as after a refusal.
            const cut = (outcome: string): boolean =>
              outcome === 'ECONNRESET' || outcome === 'UND_ERR_SOCKET';
            const reset = shutdown.filter((o) => cut(o.outcome)).map((o) => o.id);
            const stored = await s.storedEvents(reset);
            const bad: Record<string, number> = {};
            for (const { id, outcome } of shutdown) {
              if (outcome === '202' || outcome === 'ECONNREFUSED') continue;
              if (cut(outcome) && !stored.has(id)) {
                s.mark(`${id}: connection ${outcome} before Herald read it (not stored)`);
                continue;
              }
              const kind = cut(outcome) ? `${outcome}, the event stored` : outcome;
              bad[kind] = (bad[kind] ?? 0) + 1;
            }
            if (Object.keys(bad).length > 0) {
              s.problems.push(
                `requests during the shutdown got other than 202 or a refused connection: ${JSON.stringify(bad)}`,
              );
            }
          });
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });

    // The single process on its embedded PostgreSQL: the kill leaves the server running on its own;
    // the restart stops it and starts it again on the same data.
    it(`kill -9 of the single process on the embedded PostgreSQL${suffix}`, async () => {
      const row = await fault(
        `kill -9 single process (embedded PostgreSQL)${suffix}`,
        'standalone',
        async (s) => {
          await s.kill('standalone');
          s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
          s.faultEnded();
          await s.start('standalone');
        },
        modeEnv,
      );
      expect(row.problems).toEqual([]);
    });
  }

  it('Redis FLUSHALL', async () => {
    const row = await fault('Redis FLUSHALL', 'split', async (s) => {
      expect(await s.infra.redis.cli('FLUSHALL')).toBe('OK');
      s.faultEnded();
    });
    expect(row.problems).toEqual([]);
  });

  it('Redis FLUSHALL while retries wait', async () => {
    // Retries due 8 s after their failure, and the sweeper's production delay (a minute) before
    // it looks for an overdue call: a retry whose delayed job the flush took must come back at
    // its own time from the recovery pass, not a minute late.
    const retryMs = 8000;
    const row = await fault(
      'Redis FLUSHALL, retries waiting',
      'split',
      async (s) => {
        s.receiver.failing = true;
        await waitUntil(() => s.receiver.refused >= 20, 30_000);
        s.receiver.failing = false;
        s.mark(`receiver answered 503 to ${s.receiver.refused} requests`);
        await sleep(2000); // the flush comes while their retries wait
        expect(await s.infra.redis.cli('FLUSHALL')).toBe('OK');
        s.faultEnded();
      },
      {
        DELIVERY_RETRY_SCHEDULE_MS: `${retryMs},${retryMs},${retryMs}`,
        DELIVERY_SWEEP_AFTER_MS: '60000',
        DELIVERY_CIRCUIT_FAILURES: '0',
      },
    );
    expect(row.problems).toEqual([]);
  });

  it('Redis down for longer than a job lock', async () => {
    const lockMs = Number(INTERVALS['DELIVERY_JOB_LOCK_MS'] ?? 30_000);
    const outageMs = Math.max(3000, 2 * lockMs);
    const row = await fault(`Redis down ${outageMs / 1000} s (> job lock)`, 'split', async (s) => {
      await s.infra.redis.kill();
      await sleep(outageMs); // the outage
      await s.infra.redis.start();
      s.faultEnded();
    });
    expect(row.problems).toEqual([]);
  });

  it('a second deployment on the same Redis prefix with another database is refused at start', async () => {
    const row = await fault('second deployment, same prefix', 'split', async (s) => {
      const database = `${s.database}_rival`;
      await s.infra.postgres.createDatabase(database);
      const rivals: HeraldProcess[] = [];
      for (const kind of ['ingest', 'delivery'] as const) {
        const rival = s.spawn(kind, { env: s.env(kind, database), port: await freePort() });
        rival.planned = 'refuse';
        rivals.push(rival);
      }
      await Promise.all(
        rivals.map(async (rival) => {
          const started = await rival.ready(60_000).then(
            () => true,
            () => false,
          );
          if (started) {
            // Not refused: both deployments share the prefix for a while (the fault), then it stops.
            await Promise.race([rival.exited, sleep(5000)]);
            if (rival.running) await rival.signal('SIGTERM', 'stop');
          } else if (rival.running) {
            await rival.signal('SIGKILL', 'kill');
          }
          const exit = rival.exit!;
          if (exit.code !== 1 || !/REDIS_PREFIX/.test(rival.output)) {
            s.problems.push(
              `${rival.name} on database ${database} was not refused (${started ? 'it started; ' : ''}` +
                `${describeExit(exit)}${/REDIS_PREFIX/.test(rival.output) ? '' : ', REDIS_PREFIX not named'})`,
            );
          }
        }),
      );
      s.faultEnded();
    });
    expect(row.problems).toEqual([]);
  });
});
