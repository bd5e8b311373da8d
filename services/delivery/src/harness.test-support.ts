import { vi } from 'vitest';
import {
  MATCH_EVENT_JOB,
  eventJobId,
  parseCidrList,
  webhooksChangedChannel,
  type WebhookEventEntry,
} from '@herald/contract';
import type { Coordination } from '@herald/runtime';
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
  close(): Promise<void>;
}

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
  const runtime = await startDelivery(
    { db, coordination, logger: silentLogger(), registry },
    settings,
  );
  return {
    runtime,
    settings,
    coordination,
    registry,
    async close() {
      await runtime.close();
      await close();
    },
  };
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

export { testRedis };
// The receiver moved to testkit; the tests that import it from here keep working.
export { startReceiver, type Receiver };
