/**
 * The server side of bench:ingest, in a process of its own so that its CPU is its own (the load
 * generator is the parent): BENCH_MODE `herald` serves the ingest service's app (createApp with
 * the production HTTP settings, as services/ingest/src/main.ts listens); BENCH_MODE `rows` is the
 * baseline, a bare `node:http` server that parses the body with JSON.parse and writes the same
 * rows by hand through `pg` (sameRowsStatement), one statement per request, answering 202 with
 * the ids. BENCH_MODE `floor` is that baseline plus the one Redis write that hands the events to
 * the workers, as Herald makes it (a match job added to BullMQ's event-match queue, with Herald's
 * job id and options) before the 202: the least work a server that promises delivery does.
 *
 * Environment: BENCH_MODE, BENCH_SCHEMA, BENCH_SUFFIX, BENCH_DATABASE_URL, BENCH_REDIS_URL;
 * `herald` also BENCH_ENQUEUE_WAIT_MS (its ENQUEUE_WAIT_FOR_WRITES_MS, passed on from the
 * parent's environment); `rows` and `floor` also BENCH_LOCALE and BENCH_SEARCH_CONFIG. Child → parent: {port} once listening.
 * Parent → child: {cmd:'profile-start'} → {ok}; {cmd:'profile-stop', file} → {summary};
 * {cmd:'exit'}.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { MATCH_EVENT_JOB } from '@herald/contract';
import { createApp } from '@herald/ingest';
import {
  Lifecycle,
  createDeliverQueue,
  createEventMatchQueue,
  createMetrics,
  createRedis,
  eventMatchJobId,
  listen,
} from '@herald/runtime';
import { createPostgresDb } from '@herald/store';
import { silentLogger } from '@herald/testkit';
import { CpuProfiler } from '../lib/cpu-profile.js';
import { productionHttp } from '../lib/http.js';
import { sameRowsStatement, type BenchItemEvent } from './same-rows.js';
import { benchRedisCoordination } from '../lib/coordination.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

const mode = required('BENCH_MODE');
const schema = required('BENCH_SCHEMA');
const suffix = required('BENCH_SUFFIX');
const databaseUrl = required('BENCH_DATABASE_URL');

async function serveHerald(): Promise<{ server: Server; close: () => Promise<void> }> {
  const logger = silentLogger();
  const redisPrefix = `herald_bench_${suffix}`;
  const db = createPostgresDb({
    connectionString: databaseUrl,
    searchPath: schema,
    maxConnections: 10,
    applicationName: `herald-bench-${suffix}`,
  });
  const redisUrl = required('BENCH_REDIS_URL');
  const redis = createRedis(redisUrl, 'producer', logger);
  const coordination = benchRedisCoordination(redis, redisUrl, redisPrefix, logger);
  const eventMatchQueue = createEventMatchQueue(coordination, logger);
  const deliverQueue = createDeliverQueue(coordination, logger);
  const http = productionHttp();
  const app = createApp({
    db,
    coordination,
    logger,
    metrics: createMetrics(),
    lifecycle: new Lifecycle(logger),
    http,
    eventMatchQueue,
    deliverQueue,
    enqueueTimeoutMs: 5000,
    ...(process.env['BENCH_ENQUEUE_WAIT_MS']
      ? { enqueueWaitForWritesMs: Number(process.env['BENCH_ENQUEUE_WAIT_MS']) }
      : {}),
  });
  const { server } = await listen(app, {
    port: 0,
    host: '127.0.0.1',
    docsUrl: http.docsUrl,
    logger,
  });
  return {
    server,
    close: async () => {
      await eventMatchQueue.close();
      // Nothing is delivered during the bench, but the queue wrote its meta key: none is left.
      await deliverQueue.obliterate({ force: true }).catch(() => undefined);
      await deliverQueue.close();
      await redis.quit();
      await db.close();
    },
  };
}

async function serveRows(
  enqueue: boolean,
): Promise<{ server: Server; close: () => Promise<void> }> {
  const locale = required('BENCH_LOCALE');
  const searchConfig = required('BENCH_SEARCH_CONFIG');
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 10,
    options: `-c search_path=${schema}`,
    application_name: `herald-bench-${enqueue ? 'floor' : 'http'}-${suffix}`,
  });
  const logger = silentLogger();
  const redis = enqueue ? createRedis(required('BENCH_REDIS_URL'), 'producer', logger) : null;
  const queue = redis
    ? createEventMatchQueue(
        benchRedisCoordination(
          redis,
          required('BENCH_REDIS_URL'),
          `herald_bench_${suffix}`,
          logger,
        ),
        logger,
      )
    : null;
  const write = async (raw: string): Promise<string> => {
    const data = (JSON.parse(raw) as { data: BenchItemEvent | BenchItemEvent[] }).data;
    const list = Array.isArray(data) ? data : [data];
    const { text, params } = sameRowsStatement(list, locale, searchConfig);
    await pool.query(text, params);
    if (queue) {
      const eventIds = list.map((event) => event.id);
      await queue.add(MATCH_EVENT_JOB, { eventIds }, { jobId: eventMatchJobId(eventIds) });
    }
    return JSON.stringify({
      data: list.map((event) => ({
        type: 'event',
        id: event.id,
        attributes: { status: 'accepted' },
      })),
    });
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      write(Buffer.concat(chunks).toString('utf8')).then(
        (answer) => {
          res.writeHead(202, {
            'content-type': 'application/json; charset=utf-8',
            'content-length': Buffer.byteLength(answer),
          });
          res.end(answer);
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(error));
        },
      );
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    close: async () => {
      await queue?.close();
      await redis?.quit();
      await pool.end();
    },
  };
}

const served = mode === 'herald' ? await serveHerald() : await serveRows(mode === 'floor');
let profiler: CpuProfiler | undefined;

process.on('message', (message: { cmd: string; file?: string }) => {
  void (async () => {
    switch (message.cmd) {
      case 'profile-start':
        profiler = new CpuProfiler();
        await profiler.start();
        process.send!({ ok: true });
        return;
      case 'profile-stop':
        process.send!({ summary: await profiler!.stop(message.file!) });
        profiler = undefined;
        return;
      case 'exit':
        served.server.closeAllConnections();
        await new Promise((resolve) => served.server.close(resolve));
        await served.close();
        process.exit(0);
    }
  })();
});
process.send!({ port: (served.server.address() as AddressInfo).port });
