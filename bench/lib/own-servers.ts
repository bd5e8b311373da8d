/**
 * A PostgreSQL cluster and a redis-server of the benchmark's own, on free ports of 127.0.0.1, for
 * the figures that the shared servers (5432, 6379; other work uses them) cannot give: Postgres's
 * statements, rows and WAL per event (pg_stat_statements, preloaded here), the CPU of the whole
 * cluster (background writers and autovacuum included), Redis's commands and CPU per event
 * (INFO commandstats, INFO cpu). The shared servers are never touched.
 *
 * The cluster is testkit's PrivatePostgres with durability put back (fsync, full-page writes:
 * its defaults for tests turn them off) and the default shared_buffers, so that its CPU and WAL
 * are a production server's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { createRedis, type Redis } from '@herald/runtime';
import { PrivatePostgres, freePort, silentLogger, waitUntil } from '@herald/testkit';

/** The role the benchmark's own monitoring queries run as: pg_stat_statements leaves it out. */
export const MONITOR_ROLE = 'bench_monitor';

export interface OwnServers {
  postgres: PrivatePostgres;
  /** What the benchmark's child process reads (TEST_DATABASE_URL, TEST_REDIS_URL, …). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

async function startRedis(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', cwd: tmpdir() },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = createRedis(url, 'producer', silentLogger());
  const up = await waitUntil(
    async () => (await probe.ping().catch(() => '')) === 'PONG' && child.exitCode === null,
    30_000,
  );
  await probe.quit().catch(() => undefined);
  if (!up) {
    child.kill('SIGKILL');
    throw new Error(`redis-server did not start on ${port}`);
  }
  return { child, url };
}

export async function startOwnServers(): Promise<OwnServers> {
  const postgres = await PrivatePostgres.create();
  let redis: ChildProcess | undefined;
  const stopSync = () => {
    redis?.kill('SIGKILL');
    postgres.destroySync();
  };
  process.once('exit', stopSync);
  try {
    for (const setting of [
      "shared_preload_libraries = 'pg_stat_statements'",
      'fsync = on',
      'full_page_writes = on',
      "shared_buffers = '128MB'",
    ]) {
      await postgres.psql(`ALTER SYSTEM SET ${setting}`);
    }
    await postgres.restart();
    await postgres.createDatabase('test');
    await postgres.psql('CREATE EXTENSION pg_stat_statements SCHEMA public', 'test');
    await postgres.psql(`CREATE ROLE ${MONITOR_ROLE} SUPERUSER LOGIN`);
    const started = await startRedis();
    redis = started.child;
    return {
      postgres,
      env: {
        TEST_DATABASE_URL: postgres.url('test'),
        BENCH_MONITOR_DATABASE_URL: `postgres://${MONITOR_ROLE}@127.0.0.1:${postgres.port}/test`,
        TEST_REDIS_URL: started.url,
      },
      async stop() {
        process.removeListener('exit', stopSync);
        const child = redis;
        if (child && child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGKILL');
          await exited;
        }
        await postgres.destroy();
      },
    };
  } catch (error) {
    process.removeListener('exit', stopSync);
    stopSync();
    throw error;
  }
}

/** INFO of the benchmark's own Redis, parsed: `section:field` → value. */
export async function redisInfo(redis: Redis): Promise<Map<string, string>> {
  const text = await redis.info('all');
  const info = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) info.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return info;
}
