import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { get } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, it } from 'vitest';
import {
  DEFAULT_INTERVALS,
  INTERVALS,
  IN_FLIGHT_PER_WEBHOOK,
  OUT_DIR,
  RECOVERY_LIMIT_S,
  describeExit,
  expectPassed,
  formatTable,
  killHeraldProcessesSync,
  runFault,
  type FaultRow,
  type HeraldKind,
  type HeraldProcess,
  type Infrastructure,
  type Scenario,
  type Stack,
} from './harness.test-support.js';
import { PrivatePostgres, PrivateRedis, freePort, waitUntil } from '@herald/testkit';
import { type FaultRedis } from './servers.test-support.js';

/**
 * The faults of the suite (docs/reliability.md) that more than one stack runs, with the same
 * criteria on each: the split stack's (faults.int.test.ts) and the many processes' (many.int.test.ts).
 * Each function declares its tests where it is called (inside a describe).
 */

/** Runs one fault and records its row (runFault with the file's infrastructure and rows). */
export type FaultRunner = (
  name: string,
  stack: Stack,
  inject: (scenario: Scenario) => Promise<void>,
  settings?: Readonly<Record<string, string>>,
) => Promise<FaultRow>;

/**
 * The files of the suite, each a section of .ci/out/faults.md (in this order), its own table
 * under .ci/out/faults/; a file run alone leaves the other sections as its last run wrote them.
 */
const SECTIONS = {
  split: 'One and two processes',
  many: `Many processes (ingest ×2, read ×2 on a replica, delivery ×3, behind a gateway)`,
} as const;

/**
 * A test file's servers and table: a Postgres cluster (with a streaming replica if asked) and a
 * Redis of its own (one server, or what `redis` starts), started before its faults and removed
 * after them, also when the run is interrupted; its rows printed and written to
 * .ci/out/faults.md. Returns the file's way to run a fault.
 */
export function useFaultInfrastructure(options: {
  section: keyof typeof SECTIONS;
  replica: boolean;
  /** Starts the Redis the processes run on: one server by default (many.int.test.ts: a cluster). */
  redis?: () => Promise<FaultRedis>;
}): FaultRunner {
  const rows: FaultRow[] = [];
  let infra: Infrastructure | undefined;

  // If the run stops without afterAll (interrupted: the runner sends its worker SIGTERM, then
  // SIGKILL 500 ms later; or the worker crashes), nothing is left running or on disk.
  const cleanUpSync = (): void => {
    killHeraldProcessesSync();
    if (!infra) return;
    infra.redis.killSync();
    infra.replica?.destroySync();
    infra.postgres.destroySync();
    for (const dir of infra.tempDirs) rmSync(dir, { recursive: true, force: true });
  };
  const cleanUpAndExit = (signal: NodeJS.Signals): void => {
    cleanUpSync();
    process.kill(process.pid, signal);
  };
  const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

  beforeAll(async () => {
    const postgres = await PrivatePostgres.create();
    let replica: PrivatePostgres | undefined;
    try {
      if (options.replica) replica = await postgres.createReplica();
      const redis = await (options.redis ?? (() => PrivateRedis.create()))();
      infra = { postgres, replica, redis, tempDirs: [] };
    } catch (error) {
      await replica?.destroy();
      await postgres.destroy();
      throw error;
    }
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
    writeSection(options.section, table);
    if (!infra) return;
    await infra.redis.destroy();
    await infra.replica?.destroy();
    await infra.postgres.destroy();
    for (const dir of infra.tempDirs) await rm(dir, { recursive: true, force: true });
    // Only now: the worker may be told to exit while the lines above run.
    process.removeListener('exit', cleanUpSync);
    for (const signal of SIGNALS) process.removeListener(signal, cleanUpAndExit);
  }, 120_000);

  return (name, stack, inject, settings) => runFault(rows, infra!, name, stack, inject, settings);
}

/** Writes a file's table, then .ci/out/faults.md from every section's latest table. */
function writeSection(section: keyof typeof SECTIONS, table: string): void {
  const dir = join(OUT_DIR, 'faults');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${section}.md`), `${table}\n`);
  const parts = (Object.keys(SECTIONS) as (keyof typeof SECTIONS)[])
    .filter((name) => existsSync(join(dir, `${name}.md`)))
    .map((name) => `## ${SECTIONS[name]}\n\n${readFileSync(join(dir, `${name}.md`), 'utf8')}`);
  writeFileSync(join(OUT_DIR, 'faults.md'), parts.join('\n'));
}

/** How the processes coordinate: Redis (REDIS_URL), or Postgres alone (REDIS_URL unset). */
export type Mode = 'redis' | 'postgres';

/**
 * One GET /readyz on a connection of its own: the status, or the error's code. Patient: on a busy
 * machine a connection may wait seconds for the process to take it, and a probe given up early
 * would miss the answer it was about to get.
 */
function probeReadiness(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = get(`${url}/readyz`, { agent: false, timeout: 15_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** Probes of /readyz on their way at most (a new one every PROBE_EVERY_MS meanwhile). */
const PROBES_IN_FLIGHT = 20;

/**
 * The SIGTERM fault's readiness delay: at least 3 s, more than the suite's shrunk 1 s, because on
 * a starved machine (load 19 on two cores) the stopping process answered no probe at all within
 * 1 s. (Herald's default, 5 s, under FAULTS_INTERVALS=default.)
 */
const readiness503Settings = {
  SHUTDOWN_READINESS_DELAY_MS: String(
    Math.max(3000, Number(INTERVALS['SHUTDOWN_READINESS_DELAY_MS'] ?? 5000)),
  ),
};
const PROBE_EVERY_MS = 50;

/**
 * Probes /readyz every PROBE_EVERY_MS, each time on a new connection as a load balancer's health
 * check does, without waiting for the earlier probes' answers (a starved process answers late, yet
 * each probe that reached it during its readiness delay still gets the 503), until stopped: when
 * it first answered 503, and when a connection was first refused.
 */
function watchReadiness(url: string) {
  let stopped = false;
  const seen: { first503?: number; firstRefused?: number } = {};
  const inFlight = new Set<Promise<void>>();
  const polling = (async () => {
    while (!stopped) {
      if (inFlight.size < PROBES_IN_FLIGHT) {
        const probe = probeReadiness(url).then((answer) => {
          if (answer === 503) seen.first503 ??= Date.now();
          if (answer === 'ECONNREFUSED') seen.firstRefused ??= Date.now();
        });
        inFlight.add(probe);
        void probe.finally(() => inFlight.delete(probe));
      }
      await sleep(PROBE_EVERY_MS);
    }
    await Promise.all(inFlight);
  })();
  return {
    async stop() {
      stopped = true;
      await polling;
      return seen;
    },
  };
}

/**
 * kill -9 of the process of `kind`, started again once the fault has ended. The calls a process
 * that delivers had in flight may be sent twice.
 */
export function killAndRestart(kind: HeraldKind): (s: Scenario) => Promise<void> {
  const delivers = kind === 'delivery' || kind === 'standalone';
  return async (s) => {
    await s.kill(kind);
    if (delivers) s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
    s.faultEnded();
    await s.start(kind);
  };
}

/**
 * The faults of the processes and of Postgres: kill -9 of delivery and of ingest, backends
 * terminated, Postgres restarted and down, SIGTERM of ingest under load. `suffix` ends every
 * fault's name (its mode, its stack).
 */
export function processFaults(fault: FaultRunner, stack: Stack, mode: Mode, suffix: string): void {
  // An empty variable counts as unset (parseEnv).
  const modeEnv: Record<string, string> = mode === 'redis' ? {} : { REDIS_URL: '' };

  for (const kind of ['delivery', 'ingest'] as const) {
    it(`kill -9 of the ${kind} process${suffix}`, async () => {
      const row = await fault(`kill -9 ${kind}${suffix}`, stack, killAndRestart(kind), modeEnv);
      expectPassed(row);
    });
  }

  it(`Postgres backends terminated repeatedly${suffix}`, async () => {
    const row = await fault(
      `Postgres backends terminated${suffix}`,
      stack,
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
    expectPassed(row);
  });

  it(`Postgres restarted${suffix}`, async () => {
    const row = await fault(
      `Postgres restarted${suffix}`,
      stack,
      async (s) => {
        await s.infra.postgres.restart();
        s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
        s.faultEnded();
      },
      modeEnv,
    );
    expectPassed(row);
  });

  it(`Postgres down for longer than the match job's whole retry budget${suffix}`, async () => {
    const row = await fault(
      `Postgres down 4 s (> match retries)${suffix}`,
      stack,
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
    expectPassed(row);
  });

  it(`SIGTERM of ingest under load: readiness 503 first, in-flight requests finish${suffix}`, async () => {
    const row = await fault(
      `SIGTERM ingest under load${suffix}`,
      stack,
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
          const delayMs = Number(readiness503Settings.SHUTDOWN_READINESS_DELAY_MS);
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
      { ...modeEnv, ...readiness503Settings },
    );
    expectPassed(row);
  });
}

/**
 * Redis's own faults: FLUSHALL, FLUSHALL while retries wait, Redis down longer than a job lock,
 * and a second deployment on the same prefix. `suffix` ends every fault's name.
 */
export function redisFaults(fault: FaultRunner, stack: Stack, suffix: string): void {
  it(`Redis FLUSHALL${suffix}`, async () => {
    const row = await fault(`Redis FLUSHALL${suffix}`, stack, async (s) => {
      await s.infra.redis.flushAll();
      // A deliver job running at the flush lost its lock and its job: the sweeper's pass after a
      // loss re-enqueues every call not held by a lease at once, those in flight too.
      s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
      s.faultEnded();
    });
    expectPassed(row);
  });

  it(`Redis FLUSHALL while retries wait${suffix}`, async () => {
    // Retries due 8 s after their failure, and the sweeper's production delay (a minute) before
    // it looks for an overdue call: a retry whose delayed job the flush took must come back at
    // its own time from the recovery pass, not a minute late.
    const retryMs = 8000;
    const row = await fault(
      `Redis FLUSHALL, retries waiting${suffix}`,
      stack,
      async (s) => {
        s.receiver.failing = true;
        await waitUntil(() => s.receiver.refused >= 20, 30_000);
        s.receiver.failing = false;
        s.mark(`receiver answered 503 to ${s.receiver.refused} requests`);
        await sleep(2000); // the flush comes while their retries wait
        await s.infra.redis.flushAll();
        s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK; // as for the FLUSHALL above
        s.faultEnded();
      },
      {
        DELIVERY_RETRY_SCHEDULE_MS: `${retryMs},${retryMs},${retryMs}`,
        DELIVERY_SWEEP_AFTER_MS: '60000',
        DELIVERY_CIRCUIT_FAILURES: '0',
      },
    );
    expectPassed(row);
  });

  it(`Redis down for longer than a job lock${suffix}`, async () => {
    const lockMs = Number(INTERVALS['DELIVERY_JOB_LOCK_MS'] ?? 30_000);
    const outageMs = Math.max(3000, 2 * lockMs);
    const row = await fault(
      `Redis down ${outageMs / 1000} s (> job lock)${suffix}`,
      stack,
      async (s) => {
        await s.infra.redis.kill();
        await sleep(outageMs); // the outage
        await s.infra.redis.start();
        // It comes back empty (no persistence): as after a FLUSHALL, a deliver job running at the
        // kill may be sent again.
        s.allowedDuplicates = IN_FLIGHT_PER_WEBHOOK;
        s.faultEnded();
      },
    );
    expectPassed(row);
  });

  it(`a second deployment on the same Redis prefix with another database is refused at start${suffix}`, async () => {
    const row = await fault(`second deployment, same prefix${suffix}`, stack, async (s) => {
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
    expectPassed(row);
  });
}
