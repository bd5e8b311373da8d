import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventMatchQueue, type EventMatchQueue, type Redis } from '@herald/runtime';
import { findRecord } from '@herald/store';
import {
  createTestDb,
  createTestToken,
  serve,
  testDeps,
  testRedis,
  type TestDb,
  type TestServer,
} from '@herald/testkit';
import { createApp } from '../app.js';

// Two ingest processes on one database: each keeps its own BatchContextCache, and what one of
// them changes must never let the other accept items against a stale model or environment.
let t: TestDb;
let redis: Redis;
const queues: EventMatchQueue[] = [];
let a: TestServer;
let b: TestServer;
let token: string;

async function startProcess(): Promise<TestServer> {
  const deps = testDeps(t.db, redis);
  const queue = createEventMatchQueue(redis, deps.redisPrefix, deps.logger);
  queues.push(queue);
  return serve(createApp({ ...deps, eventMatchQueue: queue, enqueueTimeoutMs: 5000 }));
}

beforeAll(async () => {
  t = await createTestDb('postgres');
  redis = testRedis();
  a = await startProcess();
  b = await startProcess();
  token = await createTestToken(t.db, 'producer');
});

afterAll(async () => {
  await a.close();
  await b.close();
  for (const queue of queues) {
    await queue.obliterate({ force: true });
    await queue.close();
  }
  await redis.quit();
  await t.cleanup();
});

async function post(server: TestServer, data: unknown[]) {
  const response = await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const model = (fields: string[], eventType: 'create' | 'update' | 'delete' = 'create') => ({
  type: 'event',
  attributes: {
    entity_type: 'item_type',
    event_type: eventType,
    entity: {
      type: 'item_type',
      id: 'note',
      ...(eventType !== 'delete' && {
        attributes: { name: 'Note', api_key: 'note', draft_mode_active: false },
      }),
    },
    related_entities: fields.map((apiKey) => ({
      type: 'field',
      id: `f-${apiKey}`,
      attributes: { api_key: apiKey, field_type: 'string' },
    })),
  },
});

const note = (id: string, attributes: Record<string, unknown>) => ({
  type: 'event',
  id: `ev-${id}`,
  attributes: {
    entity_type: 'item',
    event_type: 'create',
    entity: {
      type: 'item',
      id,
      attributes,
      relationships: { item_type: { data: { type: 'item_type', id: 'note' } } },
    },
  },
});

const environment = (locales: string[]) => ({
  type: 'event',
  attributes: {
    entity_type: 'environment',
    event_type: 'update',
    entity: { type: 'environment', id: 'main', attributes: { locales } },
  },
});

describe('POST /events across processes (the batch context cache)', () => {
  it('never accepts an item against a model another process changed or deleted', async () => {
    expect((await post(b, [model(['title', 'body'])])).status).toBe(202);
    // Process a reads the model, then serves the next batches from its cache.
    expect((await post(a, [note('n1', { title: 'one' })])).status).toBe(202);
    expect((await post(a, [note('n2', { title: 'two' })])).status).toBe(202);
    expect((await findRecord(t.db, 'main', 'n2'))?.currentAttributes).toEqual({ title: 'two' });

    // Process b drops the field `title`: a's cached model still has it.
    expect((await post(b, [model(['body'], 'update')])).status).toBe(202);
    const refused = await post(a, [note('n3', { title: 'three' })]);
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('data.0.attributes.entity.attributes.title');
    expect(await findRecord(t.db, 'main', 'n3')).toBeNull();
    expect((await post(a, [note('n4', { body: 'four' })])).status).toBe(202);

    // Process b deletes the model: a's cache still knows it.
    expect((await post(b, [model([], 'delete')])).status).toBe(202);
    const unknown = await post(a, [note('n5', { body: 'five' })]);
    expect(unknown.status).toBe(422);
    expect(JSON.stringify(unknown.body)).toContain('unknown model');
    expect(await findRecord(t.db, 'main', 'n5')).toBeNull();
  });

  it('never builds documents for locales another process changed', async () => {
    expect((await post(b, [model(['title'])])).status).toBe(202);
    expect((await post(a, [note('l1', { title: 'walrus' })])).status).toBe(202);
    expect((await post(a, [note('l2', { title: 'walrus' })])).status).toBe(202);
    expect((await post(b, [environment(['en', 'it'])])).status).toBe(202);
    expect((await post(a, [note('l3', { title: 'tricheco' })])).status).toBe(202);
    const { rows } = await t.db.query(
      `SELECT locale FROM record_texts WHERE record_id = 'l3' AND version = 'current' ORDER BY locale`,
    );
    expect(rows).toEqual([{ locale: 'en' }, { locale: 'it' }]);
  });

  it('answers duplicates from the cached path as from the full one', async () => {
    expect((await post(a, [note('d1', { title: 'once' })])).status).toBe(202);
    const again = await post(a, [note('d1', { title: 'twice' }), note('d2', { title: 'new' })]);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({
      data: [
        { type: 'event', id: 'ev-d1', attributes: { status: 'duplicate' } },
        { type: 'event', id: 'ev-d2', attributes: { status: 'accepted' } },
      ],
    });
    expect((await findRecord(t.db, 'main', 'd1'))?.currentAttributes).toEqual({ title: 'once' });
  });
});
