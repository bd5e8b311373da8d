import { describe, expect, it } from 'vitest';
import {
  findEvents,
  insertEvents,
  upsertModel,
  type Db,
  type FieldWrite,
  type NewEvent,
} from '@herald/store';
import { testItemEvent } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import { ModelCache } from './loaders.js';

const t = suiteTestDb();

/** The real database, counting the statements sent through it. */
function counted(db: Db): { db: Db; statements: () => number } {
  let statements = 0;
  const wrapped: Db = Object.create(db) as Db;
  wrapped.query = (...args: Parameters<Db['query']>) => {
    statements++;
    return db.query(...args);
  };
  return { db: wrapped, statements: () => statements };
}

const field = (apiKey: string, fieldType: string, position: number): FieldWrite => ({
  apiKey,
  fieldType,
  localized: false,
  id: null,
  label: null,
  position,
  attributes: {},
});

const saveModel = (fields: FieldWrite[]) =>
  upsertModel(
    t.db,
    'main',
    {
      id: 'article',
      apiKey: 'article',
      name: 'Article',
      modularBlock: false,
      sortable: false,
      tree: false,
      draftModeActive: false,
      attributes: {},
    },
    fields,
  );

const itemEvent = (id: string): NewEvent =>
  testItemEvent(id, { itemTypeId: 'article', itemTypeApiKey: 'article' });

/** The event as the match worker reads it (with its model's version at that moment). */
async function readEvent(id: string) {
  await insertEvents(t.db, [itemEvent(id)]);
  const [event] = await findEvents(t.db, [id]);
  return event!;
}

describe('ModelCache', () => {
  it('serves an unchanged model from memory, and reads a changed one again', async () => {
    await saveModel([field('title', 'string', 0)]);
    const { db, statements } = counted(t.db);
    const cache = new ModelCache(db);

    const first = await readEvent('mc-1');
    expect(first.modelVersion).toMatch(/^\d+$/);
    const fieldsOf = async (event: typeof first) =>
      (await cache.forEvent(event)('main', ['article']))
        .get('article')
        ?.fields.map((f) => f.apiKey);
    expect(await fieldsOf(first)).toEqual(['title']);
    expect(statements()).toBe(1);
    // Same version (another event of the unchanged model): no query.
    expect(await fieldsOf(await readEvent('mc-2'))).toEqual(['title']);
    expect(statements()).toBe(1);

    // The model gains a block field: events read now carry the new version, and get the new fields.
    await saveModel([field('title', 'string', 0), field('body', 'rich_text', 1)]);
    const later = await readEvent('mc-3');
    expect(later.modelVersion).not.toBe(first.modelVersion);
    expect(await fieldsOf(later)).toEqual(['title', 'body']);
    expect(statements()).toBe(2);
    expect(await fieldsOf(later)).toEqual(['title', 'body']);
    expect(statements()).toBe(2);
  });

  it('reads models whose version the caller does not know', async () => {
    await saveModel([field('title', 'string', 0)]);
    const { db, statements } = counted(t.db);
    const cache = new ModelCache(db);
    const event = await readEvent('mc-4');
    await cache.forEvent(event)('main', ['article']);
    // A model other than the event's own (a block's model), or an event without a version.
    await cache.forEvent({ ...event, itemTypeId: 'other' })('main', ['article']);
    await cache.forEvent({ ...event, modelVersion: null })('main', ['article']);
    expect(statements()).toBe(3);
  });
});
