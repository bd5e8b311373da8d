import { describe, expect } from 'vitest';
import { findEvent } from '@herald/store';
import {
  fieldEntity,
  itemEvent as itemEventOf,
  modelEvent,
  randomId,
  type TestApi,
} from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

/**
 * POST /events keeps, on each item event that came without a previous_entity, the version of its
 * record it replaced as stored before it was applied, and the status it gives the record
 * (migration 022; field-aware matching compares with them). On Postgres and on the embedded one, on the
 * one-statement path (writeItemBatch) and on the transaction (a record twice in a batch, blocks).
 */
for (const kind of ['postgres', 'embedded'] as const) {
  const it = appTest(createApp, { db: kind });

  const field = (apiKey: string, fieldType: string) => fieldEntity(apiKey, fieldType);
  const model = (id: string, fields: unknown[], flags: Record<string, boolean> = {}) =>
    modelEvent(id, flags, fields);
  const itemEvent = (
    eventType: string,
    id: string,
    attributes: Record<string, unknown>,
    extra: Record<string, unknown> = {},
    model = 'post',
  ) => itemEventOf(eventType, id, attributes, { model, event: extra });

  async function post(api: TestApi, data: unknown[]): Promise<void> {
    const answer = await api.call('POST', '/events', { data });
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  }

  describe(`the version an item event replaced, on ${kind}`, () => {
    it.beforeAll(async ({ api }) => {
      await post(api, [
        model('post', [field('title', 'string'), field('views', 'integer')], {
          draft_mode_active: true,
        }),
        model('block', [field('text', 'string')], { modular_block: true }),
        model('page', [field('title', 'string'), field('hero', 'single_block')], {
          draft_mode_active: true,
        }),
      ]);
    });

    const versions = async (db: Parameters<typeof findEvent>[0], ids: string[]) =>
      Promise.all(
        ids.map(async (id) => {
          const event = await findEvent(db, id);
          return [event?.previousAttributes, event?.recordStatus];
        }),
      );

    it('one event per request (the one-statement path)', async ({ api, db }) => {
      const id = randomId('r');
      const events = [
        itemEvent('create', id, { title: 'a', views: 1 }),
        itemEvent('update', id, { title: 'b', views: 1 }),
        itemEvent('publish', id, { title: 'b', views: 1 }),
        itemEvent('update', id, { title: 'c', views: 2 }),
        itemEvent('publish', id, { title: 'c', views: 2 }),
        itemEvent('delete', id, {}),
      ];
      for (const event of events) await post(api, [event]);
      expect(
        await versions(
          db,
          events.map((e) => e.id),
        ),
      ).toEqual([
        [{}, 'draft'],
        [{ title: 'a', views: 1 }, 'draft'],
        // A publish replaces the published version: there was none.
        [{}, 'published'],
        [{ title: 'b', views: 1 }, 'updated'],
        [{ title: 'b', views: 1 }, 'published'],
        [{ title: 'c', views: 2 }, null],
      ]);
    });

    it('a record twice in one batch, and a model with blocks (the transaction)', async ({
      api,
      db,
    }) => {
      const id = randomId('r');
      const page = randomId('p');
      const block = {
        type: 'item',
        id: randomId('b'),
        attributes: { text: 'x' },
        relationships: { item_type: { data: { type: 'item_type', id: 'block' } } },
      };
      const events = [
        itemEvent('create', id, { title: 'a', views: 1 }),
        itemEvent('update', id, { title: 'b', views: 1 }),
        itemEvent('create', page, { title: 'p', hero: block }, {}, 'page'),
      ];
      await post(api, events);
      const again = itemEvent('update', page, { title: 'q', hero: block }, {}, 'page');
      await post(api, [again]);
      expect(
        await versions(
          db,
          [...events, again].map((e) => e.id),
        ),
      ).toEqual([
        [{}, 'draft'],
        [{ title: 'a', views: 1 }, 'draft'],
        [{}, 'draft'],
        // As stored: the block field holds the block's id.
        [{ title: 'p', hero: block.id }, 'draft'],
      ]);
    });

    it('none when the event carries its previous_entity', async ({ api, db }) => {
      const id = randomId('r');
      const previous = { type: 'item', id, attributes: { title: 'z' } };
      const event = itemEvent('update', id, { title: 'a' }, { previous_entity: previous });
      await post(api, [event]);
      expect(await versions(db, [event.id])).toEqual([[null, 'draft']]);
    });
  });
}
