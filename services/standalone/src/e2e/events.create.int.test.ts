import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventJobId } from '@herald/contract';
import { sweepUnmatchedEvents } from '@herald/delivery';
import { createApp } from '@herald/ingest';
import {
  createEventMatchQueue,
  createRedis,
  type EventMatchQueue,
  type Redis,
} from '@herald/runtime';
import { findRecord } from '@herald/store';
import {
  createTestDb,
  createTestToken,
  fieldEntity,
  itemEvent,
  modelEvent,
  modelWithRecordEvents,
  randomId,
  serve,
  silentLogger,
  testDeps,
  testRedis,
  type TestDb,
  type TestServer,
} from '@herald/testkit';
import {
  addWebhook,
  startPipeline,
  startReceiver,
  waitForCall,
  webhookInput,
  type Pipeline,
  type Receiver,
} from '@herald/delivery/testing';

/**
 * POST /events (services/ingest) with delivery behind it: item deletes that name only their
 * record reach the webhooks filtered on its model, and the events stored while Redis was down are
 * enqueued by delivery's sweeper.
 */

let t: TestDb;
let redis: Redis;
let queue: EventMatchQueue;
let server: TestServer;
let token: string;
let deps: ReturnType<typeof testDeps>;

beforeAll(async () => {
  t = await createTestDb('postgres');
  redis = testRedis();
  deps = testDeps(t.db, redis);
  queue = createEventMatchQueue(deps.coordination, deps.logger);
  server = await serve(createApp({ ...deps, eventMatchQueue: queue, enqueueTimeoutMs: 5000 }));
  token = await createTestToken(t.db, 'producer');
  // The model of the records stored while Redis is down.
  const response = await post([
    modelEvent('post', { draft_mode_active: true }, [fieldEntity('title', 'string')]),
  ]);
  expect(response.status).toBe(202);
});

afterAll(async () => {
  await server.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await t.cleanup();
});

/** The 202 body: one entry per event. */
interface Answer {
  status: number;
  body: { data: { attributes: { status?: string } }[] };
}

async function post(data: unknown, options: { url?: string } = {}): Promise<Answer> {
  const response = await fetch(`${options.url ?? server.url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data }),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

describe('item deletes that name only their record', () => {
  /** A model whose id and api_key differ, with one record per id given. */
  async function modelWithRecords(...ids: string[]) {
    const { model, events } = modelWithRecordEvents(ids);
    expect((await post(events)).status).toBe(202);
    return model;
  }

  describe('delivered end to end', () => {
    let pipeline: Pipeline;
    let receiver: Receiver;
    let api: TestServer;

    beforeAll(async () => {
      pipeline = await startPipeline(t.db);
      receiver = await startReceiver();
      // This file's app, enqueuing where the pipeline's match worker takes jobs.
      api = await serve(
        createApp({
          ...deps,
          coordination: pipeline.coordination,
          eventMatchQueue: pipeline.runtime.matchQueue,
        }),
      );
    });

    afterAll(async () => {
      await api.close();
      await pipeline.close();
      await receiver.close();
    });

    it('reach the webhooks filtered by the model id and by its api_key', async () => {
      const id = randomId('r');
      const model = await modelWithRecords(id);
      const onDeleteOf = (entityIds: string[]) =>
        webhookInput(receiver.url, {
          events: [
            {
              entity_type: 'item',
              event_types: ['delete'],
              filters: [{ entity_type: 'item_type', entity_ids: entityIds }],
            },
          ],
        });
      const byId = await addWebhook(t.db, pipeline, onDeleteOf([model.id]));
      const byApiKey = await addWebhook(t.db, pipeline, onDeleteOf([model.apiKey]));
      const otherModel = await addWebhook(t.db, pipeline, onDeleteOf(['post']));

      const event = itemEvent('delete', id, {}, { model: null });
      expect((await post([event], { url: api.url })).status).toBe(202);
      await waitForCall(t.db, event.id, byId.id, ['success']);
      await waitForCall(t.db, event.id, byApiKey.id, ['success']);
      const sent = receiver.requests
        .map((request) => JSON.parse(request.body) as Record<string, unknown>)
        .filter((body) => (body['entity'] as { id: string }).id === id);
      expect(sent.map((body) => [body['event_type'], body['webhook_id']]).sort()).toEqual(
        [
          ['delete', byId.id],
          ['delete', byApiKey.id],
        ].sort(),
      );
      const { rows } = await t.db.query<{ webhook_id: string }>(
        'SELECT webhook_id FROM webhook_calls WHERE event_id = $1',
        [event.id],
      );
      expect(rows.map((row) => row.webhook_id).sort()).toEqual([byId.id, byApiKey.id].sort());
      expect(rows.map((row) => row.webhook_id)).not.toContain(otherModel.id);
    });
  });
});

describe('while Redis is down', () => {
  it('accepts and stores events, and the sweeper enqueues them once Redis is reachable', async () => {
    const logger = silentLogger();
    const deadRedis = createRedis('redis://127.0.0.1:1', 'producer', logger);
    const downDeps = { ...testDeps(t.db, deadRedis), redisPrefix: deps.redisPrefix };
    const deadQueue = createEventMatchQueue(downDeps.coordination, logger);
    const down = await serve(
      createApp({ ...downDeps, eventMatchQueue: deadQueue, enqueueTimeoutMs: 200 }),
    );
    try {
      const events = [
        itemEvent('create', randomId('r'), { title: 'a' }),
        itemEvent('create', randomId('r'), { title: 'b' }),
      ];
      const answer = await post(events, { url: down.url });
      expect(answer.status).toBe(202);
      expect(answer.body.data.map((d) => d.attributes.status)).toEqual(['accepted', 'accepted']);
      expect(await findRecord(t.db, 'main', events[0]!.attributes.entity.id)).not.toBeNull();
      for (const event of events) expect(await queue.getJob(eventJobId(event.id))).toBeUndefined();
      const metrics = await downDeps.metrics.registry.getSingleMetricAsString(
        'herald_ingest_enqueue_failures_total',
      );
      expect(metrics).toMatch(/herald_ingest_enqueue_failures_total 1/);

      // Redis is back (the real one): the sweeper enqueues every stored, unmatched event.
      await sweepUnmatchedEvents({
        db: t.db,
        queue,
        registry: deps.metrics.registry,
        graceMs: 0,
        batchSize: 1,
        enqueueTimeoutMs: 5000,
      });
      for (const event of events) {
        expect((await queue.getJob(eventJobId(event.id)))?.data).toEqual({ eventIds: [event.id] });
      }
    } finally {
      await down.close();
      await deadQueue.close();
      deadRedis.disconnect();
    }
  });
});
