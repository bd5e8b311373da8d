import { describe, expect } from 'vitest';
import { findRecord } from '@herald/store';
import { itemEvent, serve, testApi, testDeps, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// Two ingest processes on one database: each keeps its own BatchContextCache, and what one of
// them changes must never let the other accept items against a stale model or environment.
// The fixture's app is process a.
const it = appTest(createApp, { role: 'producer' });

let b: TestApi;
it.beforeAll(async ({ api, db, redis }) => {
  const deps = testDeps(db, redis);
  const server = await serve(createApp(deps));
  b = testApi(server.url, api.token);
  return async () => {
    await server.close();
    await deps.eventMatchQueue.close();
  };
});

async function post(process: TestApi, data: unknown[]) {
  const { status, body } = await process.call('POST', '/events', { data });
  return { status, body: body as Record<string, unknown> };
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

/** The create event of record `id` of the note model. */
const note = (id: string, attributes: Record<string, unknown>) =>
  itemEvent('create', id, attributes, { model: 'note', eventId: `ev-${id}` });

const environment = (locales: string[]) => ({
  type: 'event',
  attributes: {
    entity_type: 'environment',
    event_type: 'update',
    entity: { type: 'environment', id: 'main', attributes: { locales } },
  },
});

describe('POST /events across processes (the batch context cache)', () => {
  it('never accepts an item against a model another process changed or deleted', async ({
    api: a,
    db,
  }) => {
    expect((await post(b, [model(['title', 'body'])])).status).toBe(202);
    // Process a reads the model, then serves the next batches from its cache.
    expect((await post(a, [note('n1', { title: 'one' })])).status).toBe(202);
    expect((await post(a, [note('n2', { title: 'two' })])).status).toBe(202);
    expect((await findRecord(db, 'main', 'n2'))?.currentAttributes).toEqual({ title: 'two' });

    // Process b drops the field `title`: a's cached model still has it.
    expect((await post(b, [model(['body'], 'update')])).status).toBe(202);
    const refused = await post(a, [note('n3', { title: 'three' })]);
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('data.0.attributes.entity.attributes.title');
    expect(await findRecord(db, 'main', 'n3')).toBeNull();
    expect((await post(a, [note('n4', { body: 'four' })])).status).toBe(202);

    // Process b deletes the model: a's cache still knows it.
    expect((await post(b, [model([], 'delete')])).status).toBe(202);
    const unknown = await post(a, [note('n5', { body: 'five' })]);
    expect(unknown.status).toBe(422);
    expect(JSON.stringify(unknown.body)).toContain('unknown model');
    expect(await findRecord(db, 'main', 'n5')).toBeNull();
  });

  it('never builds documents for locales another process changed', async ({ api: a, db }) => {
    expect((await post(b, [model(['title'])])).status).toBe(202);
    expect((await post(a, [note('l1', { title: 'walrus' })])).status).toBe(202);
    expect((await post(a, [note('l2', { title: 'walrus' })])).status).toBe(202);
    expect((await post(b, [environment(['en', 'it'])])).status).toBe(202);
    expect((await post(a, [note('l3', { title: 'tricheco' })])).status).toBe(202);
    const { rows } = await db.query(
      `SELECT locale FROM record_texts WHERE record_id = 'l3' AND version = 'current' ORDER BY locale`,
    );
    expect(rows).toEqual([{ locale: 'en' }, { locale: 'it' }]);
  });

  it('answers duplicates from the cached path as from the full one', async ({ api: a, db }) => {
    expect((await post(a, [note('d1', { title: 'once' })])).status).toBe(202);
    const again = await post(a, [note('d1', { title: 'twice' }), note('d2', { title: 'new' })]);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({
      data: [
        { type: 'event', id: 'ev-d1', attributes: { status: 'duplicate' } },
        { type: 'event', id: 'ev-d2', attributes: { status: 'accepted' } },
      ],
      meta: { read_after: expect.any(String) as string },
    });
    expect((await findRecord(db, 'main', 'd1'))?.currentAttributes).toEqual({ title: 'once' });
  });
});
