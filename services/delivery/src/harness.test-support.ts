import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import {
  MATCH_EVENT_JOB,
  eventJobId,
  parseCidrList,
  webhooksChangedChannel,
  type Destination,
  type WebhookEventEntry,
} from '@herald/contract';
import { HERALD_VERSION } from '@herald/payload';
import { LocalMatchHandOff, type Coordination } from '@herald/runtime';
import {
  findWebhookCall,
  insertEvents,
  insertWebhook,
  type Db,
  type NewEvent,
  type WebhookCallRecord,
  type WebhookInput,
  type WebhookRecord,
} from '@herald/store';
import {
  TEST_DATABASE_URL,
  randomId,
  silentLogger,
  startReceiver,
  testPostgresCoordination,
  testRedis,
  testRedisCoordination,
  testWebhookInput,
  type Receiver,
} from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import { Registry } from 'prom-client';
import { startDelivery, type DeliveryRuntime, type DeliverySettings } from './workers.js';

/** Test helpers shared by the delivery integration tests (real Redis, Postgres, HTTP). */

/** Where the queues and the shared state are: Redis (REDIS_URL set), or Postgres alone. */
export type CoordinationMode = 'redis' | 'postgres';

/** Both modes, for the tests that run in each (`describe.each(COORDINATION_MODES)`). */
export const COORDINATION_MODES: readonly CoordinationMode[] = ['redis', 'postgres'];

/** The coordination of a test's pipeline, and what closes it (its Redis, its queues' schema). */
export async function testCoordination(
  db: Db,
  mode: CoordinationMode,
  /** Another pipeline's prefix: a second process of its deployment. */
  prefix?: string,
): Promise<{ coordination: Coordination; close: () => Promise<void> }> {
  if (mode === 'postgres') {
    const { coordination, cleanup } = await testPostgresCoordination(
      db,
      prefix,
      prefix !== undefined,
    );
    return { coordination, close: cleanup };
  }
  const redis = testRedis('producer');
  // A producer connection fails fast until it is connected.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  return {
    coordination: testRedisCoordination(redis, prefix),
    close: async () => {
      await redis.quit();
    },
  };
}

export function testSettings(overrides: Partial<DeliverySettings> = {}): DeliverySettings {
  return {
    siteId: 'site-1',
    userAgent: 'Herald/test',
    allowCidrs: parseCidrList('127.0.0.0/8'),
    connectTimeoutMs: 500,
    timeoutMs: 1500,
    connectionsPerOrigin: 16,
    responseMaxBytes: 65_536,
    retry: { scheduleMs: [150, 300, 450], jitter: 0.1, retryAfterMaxMs: 86_400_000 },
    maxInFlightPerWebhook: 10,
    circuit: { failures: 10, cooldownMs: 60_000 },
    disableAfterFailingMs: 5 * 86_400_000,
    noticeFailures: 5,
    noticePollMs: 100,
    bulkJobsPerProcess: 2,
    bulkJobsPollMs: 100,
    deliverConcurrency: 50,
    matchConcurrency: 10,
    matchRetries: { attempts: 10, backoffMs: 1000 },
    jobLockMs: 5000,
    leaseMs: 3000,
    sweepIntervalMs: 60_000,
    sweepAfterMs: 60_000,
    eventSweepGraceMs: 60_000,
    sweepBatchSize: 1000,
    sweepEnqueueTimeoutMs: 5000,
    indexReloadMs: 60_000,
    logRetentionMs: null,
    logPruneIntervalMs: 3_600_000,
    ...overrides,
  };
}

export interface Pipeline {
  runtime: DeliveryRuntime;
  settings: DeliverySettings;
  coordination: Coordination;
  registry: Registry;
  /** addWebhook on the pipeline's database. */
  addWebhook(input: WebhookInput): Promise<WebhookRecord>;
  /** emitEvents on the pipeline's database. */
  emit(events: NewEvent[]): Promise<void>;
  /** callOf on the pipeline's database. */
  callOf(eventId: string, webhookId: string): Promise<WebhookCallRecord>;
  /** waitForCall on the pipeline's database. */
  waitForCall(
    eventId: string,
    webhookId: string,
    statuses: WebhookCallRecord['status'][],
    timeout?: number,
  ): Promise<WebhookCallRecord>;
  /** Its hand-off from ingest in memory (the single process's): ids it takes skip the queue. */
  localMatch: LocalMatchHandOff;
  close(): Promise<void>;
}

/** Retries every 100 ms, eight of them: a test sees a failing call retried at once. */
export const FAST_RETRIES: DeliverySettings['retry'] = {
  scheduleMs: [100, 100, 100, 100, 100, 100, 100, 100],
  jitter: 0,
  retryAfterMaxMs: 0,
};

export interface PipelineOptions {
  /** Redis (default) or Postgres alone. */
  mode?: CoordinationMode;
  /** The prefix of another pipeline, to run as a second process of the same deployment. */
  prefix?: string;
}

export async function startPipeline(
  db: Db,
  overrides: Partial<DeliverySettings> = {},
  options: PipelineOptions = {},
): Promise<Pipeline> {
  const settings = testSettings(overrides);
  const { coordination, close } = await testCoordination(
    db,
    options.mode ?? 'redis',
    options.prefix,
  );
  const registry = new Registry();
  const localMatch = new LocalMatchHandOff();
  const runtime = await startDelivery(
    { db, coordination, logger: silentLogger(), registry, localMatch },
    settings,
  );
  const pipeline: Pipeline = {
    runtime,
    settings,
    coordination,
    registry,
    addWebhook: (input) => addWebhook(db, pipeline, input),
    emit: (events) => emitEvents(db, pipeline, events),
    callOf: (eventId, webhookId) => callOf(db, eventId, webhookId),
    waitForCall: (eventId, webhookId, statuses, timeout) =>
      waitForCall(db, eventId, webhookId, statuses, timeout),
    localMatch,
    async close() {
      await runtime.close();
      await close();
    },
  };
  return pipeline;
}

/**
 * integrationTest with `pipeline` (startPipeline, settings testSettings(overrides)) on the file's
 * database, made before its first test, and `receiver`, a receiver of the file's answering 200
 * "ok" (its respond can be replaced).
 */
export function pipelineTest(
  overrides: Partial<DeliverySettings> = {},
  mode: CoordinationMode = 'redis',
) {
  const it = integrationTest()
    .extend('pipeline', { scope: 'file' }, async ({ db }, { onCleanup }) => {
      const pipeline = await startPipeline(db, overrides, { mode });
      onCleanup(() => pipeline.close());
      return pipeline;
    })
    // vitest reads what a fixture needs from its destructuring: this one needs nothing.
    // eslint-disable-next-line no-empty-pattern
    .extend('receiver', { scope: 'file' }, async ({}, { onCleanup }) => {
      const receiver = await startReceiver();
      onCleanup(() => receiver.close());
      return receiver;
    });
  it.beforeAll(({ pipeline: _pipeline }) => {});
  return it;
}

export function webhookInput(url: string, overrides: Partial<WebhookInput> = {}): WebhookInput {
  return testWebhookInput({ url, ...overrides });
}

/**
 * A webhook's `events`: item events of these types in one environment only. Tests that share a
 * pipeline give each test an environment of its own, so that webhooks of other tests (which
 * match every item event otherwise) never see its events.
 */
export function itemEventsIn(
  environment: string,
  eventTypes: string[] = ['create', 'update', 'delete', 'publish', 'unpublish'],
): WebhookEventEntry[] {
  return [
    {
      entity_type: 'item',
      event_types: eventTypes,
      filters: [{ entity_type: 'environment', entity_ids: [environment] }],
    },
  ];
}

/**
 * Webhooks and events of one environment (itemEventsIn): a test's own, so that webhooks of other
 * tests on the same pipeline never see its events.
 */
export function inEnvironment(environment: string) {
  return {
    environment,
    /** webhookInput listening to item events of the environment only. */
    webhook: (url: string, overrides: Partial<WebhookInput> = {}) =>
      webhookInput(url, { events: itemEventsIn(environment), ...overrides }),
    /** itemEvent in the environment. */
    event: (overrides: Partial<NewEvent> = {}) => itemEvent({ environment, ...overrides }),
  };
}

/** Makes `receiver` answer 503 until `recover()`, then 200: an endpoint's outage and its end. */
export function outage(receiver: Receiver): { recover(): void } {
  let down = true;
  receiver.respond = (_req, res) => res.writeHead(down ? 503 : 200).end();
  return {
    recover: () => {
      down = false;
    },
  };
}

/** Stores a webhook, announces it as ingest does, and waits until the match index has it. */
export async function addWebhook(
  db: Db,
  pipeline: Pipeline,
  input: WebhookInput,
): Promise<WebhookRecord> {
  const webhook = await insertWebhook(db, input);
  await pipeline.coordination.publish(
    webhooksChangedChannel(pipeline.coordination.prefix),
    JSON.stringify({ id: webhook.id, change: 'created' }),
  );
  if (webhook.enabled) {
    await vi.waitFor(() => {
      if (!pipeline.runtime.index.has(webhook.id)) throw new Error('not indexed yet');
    });
  }
  return webhook;
}

/**
 * A webhook of its own environment (returned) publishing the environment's item events to
 * `destination`; its url is never called.
 */
export async function brokerWebhook(
  db: Db,
  pipeline: Pipeline,
  destination: Destination,
  overrides: Partial<WebhookInput> = {},
): Promise<{ webhook: WebhookRecord; environment: string }> {
  const environment = randomId('env');
  const webhook = await addWebhook(
    db,
    pipeline,
    webhookInput('https://unused.example/hook', {
      events: itemEventsIn(environment),
      destination,
      ...overrides,
    }),
  );
  return { webhook, environment };
}

export function itemEvent(overrides: Partial<NewEvent> = {}): NewEvent {
  const id = randomId('rec');
  return {
    id: randomId('evt'),
    environment: 'main',
    isEnvironmentPrimary: true,
    entityType: 'item',
    eventType: 'update',
    entityId: id,
    itemTypeId: 'model-article',
    itemTypeApiKey: 'article',
    occurredAt: new Date('2026-11-21T10:00:00.000Z'),
    entity: {
      type: 'item',
      id,
      attributes: { title: 'Hello "world"' },
      relationships: { item_type: { data: { type: 'item_type', id: 'model-article' } } },
      meta: { status: 'draft' },
    },
    previousEntity: null,
    relatedEntities: [],
    ...overrides,
  };
}

/**
 * Version `version` of record `entity` in `environment`: title `v<version>` and current_version
 * `version`, a create at version 1 and an update after it, at `version` ms past a fixed instant
 * (overrides: another event type or time).
 */
export function itemVersion(
  environment: string,
  entity: string,
  version: number,
  overrides: Partial<NewEvent> = {},
): NewEvent {
  const event = itemEvent({
    environment,
    entityId: entity,
    eventType: version === 1 ? 'create' : 'update',
    occurredAt: new Date(Date.UTC(2026, 10, 27, 12, 0, 0, version)),
    ...overrides,
  });
  return {
    ...event,
    entity: {
      ...(event.entity as object),
      id: entity,
      attributes: { title: `v${version}` },
      meta: { status: 'draft', current_version: String(version) },
    },
  };
}

/** Stores events as POST /events does and enqueues their match job. */
export async function emitEvents(db: Db, pipeline: Pipeline, events: NewEvent[]): Promise<void> {
  await insertEvents(db, events);
  // One job for the batch, as ingest enqueues it.
  await pipeline.runtime.matchQueue.add(
    MATCH_EVENT_JOB,
    { eventIds: events.map((event) => event.id) },
    { jobId: eventJobId(events[0]!.id), removeOnComplete: true, removeOnFail: true },
  );
}

/** The call of (event, webhook), once the match worker created it. */
export async function callOf(
  db: Db,
  eventId: string,
  webhookId: string,
): Promise<WebhookCallRecord> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM webhook_calls WHERE event_id = $1 AND webhook_id = $2',
    [eventId, webhookId],
  );
  if (!rows[0]) throw new Error('no call yet');
  return (await findWebhookCall(db, rows[0].id))!;
}

/** Waits until the call reaches one of the statuses. */
export async function waitForCall(
  db: Db,
  eventId: string,
  webhookId: string,
  statuses: WebhookCallRecord['status'][],
  timeout = 10_000,
): Promise<WebhookCallRecord> {
  return vi.waitFor(
    async () => {
      const call = await callOf(db, eventId, webhookId);
      if (!statuses.includes(call.status)) throw new Error(`call is ${call.status}`);
      return call;
    },
    { timeout, interval: 25 },
  );
}

/**
 * One event (an item event unless `event` makes another) of a new broker webhook's own
 * environment (brokerWebhook) sent through the pipeline: the webhook, the event, and its call once
 * in one of `statuses`.
 */
export async function sendToDestination(
  db: Db,
  pipeline: Pipeline,
  destination: Destination,
  statuses: WebhookCallRecord['status'][],
  options: { event?: (environment: string) => NewEvent; timeout?: number } = {},
): Promise<{ webhook: WebhookRecord; event: NewEvent; call: WebhookCallRecord }> {
  const { webhook, environment } = await brokerWebhook(db, pipeline, destination);
  const event = options.event?.(environment) ?? itemEvent({ environment });
  await emitEvents(db, pipeline, [event]);
  const call = await waitForCall(db, event.id, webhook.id, statuses, options.timeout);
  return { webhook, event, call };
}

/** The built delivery service (`pnpm build` first). */
const DELIVERY_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** A delivery process run as a child: the built service, on a test's schema and Redis prefix. */
export interface DeliveryProcess {
  readonly child: ChildProcess;
  /** Resolves once it logs `delivery listening` (workers started); rejects if it exits first. */
  readonly ready: Promise<void>;
  /** What it wrote on stdout and stderr (the last 64 KB), for a failure's message. */
  readonly output: string;
  /** Sends `signal` (kill -9 by default) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The built delivery service as a child process on the database schema `schema` of the test
 * Postgres and `prefix` on `redisUrl`: a second process of a test's deployment (a pipeline's
 * prefix), or the only one. `env` adds or overrides its variables (intervals, limits…).
 */
export function spawnDeliveryProcess(options: {
  schema: string;
  prefix: string;
  redisUrl: string;
  env?: Record<string, string>;
}): DeliveryProcess {
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${options.schema}`);
  const child = spawn(process.execPath, [DELIVERY_MAIN], {
    env: {
      PATH: process.env['PATH'],
      DATABASE_URL: url.toString(),
      REDIS_URL: options.redisUrl,
      REDIS_PREFIX: options.prefix,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      MIGRATE_ON_START: 'false',
      SHUTDOWN_READINESS_DELAY_MS: '0',
      SSRF_ALLOW_CIDRS: '127.0.0.0/8',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-65_536);
      if (/"msg":"delivery listening/.test(output)) resolve();
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    void exited.then(() => reject(new Error(`the delivery process exited:\n${output}`)));
  });
  // A process killed before it was ready is no failure of its own.
  ready.catch(() => undefined);
  return {
    child,
    ready,
    get output() {
      return output;
    },
    async stop(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/**
 * Delivery beside an end-to-end test's API app, in this process: on the app's database and Redis
 * prefix (through a Redis connection of its own, closed with it), sending to 127.0.0.1 only, as a
 * release (its User-Agent), with short timeouts and no retry within a test.
 */
export async function startE2eDelivery(options: {
  db: Db;
  redisPrefix: string;
  siteId: string;
  indexReloadMs: number;
  registry?: Registry;
}): Promise<DeliveryRuntime> {
  const redis = testRedis();
  try {
    const runtime = await startDelivery(
      {
        db: options.db,
        coordination: testRedisCoordination(redis, options.redisPrefix),
        logger: silentLogger(),
        registry: options.registry ?? new Registry(),
      },
      testSettings({
        siteId: options.siteId,
        userAgent: `Herald/${HERALD_VERSION}`,
        allowCidrs: parseCidrList('127.0.0.0/8'),
        connectTimeoutMs: 1000,
        timeoutMs: 3000,
        retry: { scheduleMs: [60_000], jitter: 0, retryAfterMaxMs: 60_000 },
        indexReloadMs: options.indexReloadMs,
      }),
    );
    return {
      ...runtime,
      async close() {
        await runtime.close();
        await redis.quit();
      },
    };
  } catch (error) {
    await redis.quit();
    throw error;
  }
}

// The runtime as these helpers type it (the package's main entry types it from dist/).
export type { DeliveryRuntime };
// RabbitMQ's, for the end-to-end tests too.
export { rabbitQueue } from './systems/attempt/publish/consumers.test-support.js';
export { testRedis };
// The receiver moved to testkit; the tests that import it from here keep working.
export { startReceiver, type Receiver };
