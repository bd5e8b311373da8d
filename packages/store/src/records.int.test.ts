import { beforeAll, describe, expect, it } from 'vitest';
import { defineModel, testItemEvent, testRecordWrite as write } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import {
  deleteRecords,
  findRecord,
  insertEvents,
  listUnmatchedEvents,
  loadBlocks,
  loadRecordModels,
  markEventsMatched,
  replaceRecordTexts,
  syncBlocks,
  textSearchConfig,
  upsertBlocks,
  upsertRecords,
  writeItemBatch,
} from '@herald/store';

for (const kind of ['postgres', 'embedded'] as const) {
  describe(`record store SQL on ${kind}`, () => {
    const t = suiteTestDb(kind);
    beforeAll(async () => {
      await defineModel(t.db, 'main', {
        id: 'post',
        apiKey: 'post',
        name: 'Post',
        fields: [{ apiKey: 'title', fieldType: 'string' }],
      });
    });

    it('stores events once and lists the unmatched ones', async () => {
      const event = testItemEvent('ev:1', { eventType: 'create' });
      expect(await insertEvents(t.db, [event, { ...event, id: 'ev:2' }, event])).toEqual(
        new Set(['ev:1', 'ev:2']),
      );
      expect(await insertEvents(t.db, [event])).toEqual(new Set());
      // Within the grace they are left to the request enqueuing them; with none, listed at once.
      expect(await listUnmatchedEvents(t.db, { acceptedMsAgo: 60_000, limit: 10 })).toEqual([]);
      expect(await listUnmatchedEvents(t.db, { acceptedMsAgo: 0, limit: 10 })).toHaveLength(2);
      await markEventsMatched(t.db, ['ev:1']);
      const left = await listUnmatchedEvents(t.db, { acceptedMsAgo: 0, limit: 10 });
      expect(left.map((e) => e.id)).toEqual(['ev:2']);
    });

    it('writes events, records and documents in one statement (writeItemBatch)', async () => {
      const event = (id: string, recordId: string) => ({
        id,
        environment: 'main',
        isEnvironmentPrimary: true,
        entityType: 'item',
        eventType: 'create',
        entityId: recordId,
        itemTypeId: 'post',
        itemTypeApiKey: 'post',
        occurredAt: new Date(),
        entity: { type: 'item', id: recordId },
        previousEntity: null,
        relatedEntities: [],
      });
      const text = (recordId: string) => ({
        environment: 'main',
        recordId,
        itemTypeId: 'post',
        version: 'current' as const,
        locale: 'en',
        config: 'english',
        text: 'batched walruses',
      });
      const first = await writeItemBatch(t.db, {
        events: [event('wb-1', 'wb-r1'), event('wb-2', 'wb-r2')],
        records: [
          write({ id: 'wb-r1', eventId: 'wb-1' }),
          write({ id: 'wb-r2', eventId: 'wb-2', mode: 'publish' }),
        ],
        texts: [text('wb-r1'), text('wb-r2')],
      });
      expect(first).toEqual({ inserted: new Set(['wb-1', 'wb-2']), written: 2 });
      expect((await findRecord(t.db, 'main', 'wb-r2'))?.status).toBe('published');
      // A duplicate event writes nothing, even with a newer record.
      const again = await writeItemBatch(t.db, {
        events: [event('wb-1', 'wb-r1')],
        records: [write({ id: 'wb-r1', eventId: 'wb-1', attributes: { title: 'changed' } })],
        texts: [],
      });
      expect(again).toEqual({ inserted: new Set(), written: 0 });
      expect((await findRecord(t.db, 'main', 'wb-r1'))?.currentAttributes).toEqual({ title: 'a' });
      const { rows } = await t.db.query(
        `SELECT record_id FROM record_texts WHERE document @@ websearch_to_tsquery('english', 'walrus') ORDER BY record_id`,
      );
      expect(rows).toEqual([{ record_id: 'wb-r1' }, { record_id: 'wb-r2' }]);
    });

    it('upserts, publishes, ignores stale writes, syncs blocks, deletes', async () => {
      expect(await upsertRecords(t.db, [write({})])).toEqual(
        new Map([['main\u0000r1', { inserted: true }]]),
      );
      await upsertRecords(t.db, [
        write({
          mode: 'publish',
          eventType: 'publish',
          updatedAt: new Date('2026-01-02T00:00:00Z'),
        }),
      ]);
      let r = await findRecord(t.db, 'main', 'r1');
      expect(r?.status).toBe('published');
      expect(r?.firstPublishedAt?.toISOString()).toBe('2026-01-02T00:00:00.000Z');
      await upsertRecords(t.db, [
        write({ attributes: { title: 'b' }, updatedAt: new Date('2026-01-03T00:00:00Z') }),
      ]);
      r = await findRecord(t.db, 'main', 'r1');
      expect(r?.status).toBe('updated');
      expect(r?.publishedAttributes).toEqual({ title: 'a' });
      // stale
      expect(await upsertRecords(t.db, [write({ attributes: { title: 'old' } })])).toEqual(
        new Map(),
      );
      expect((await findRecord(t.db, 'main', 'r1'))?.currentAttributes).toEqual({ title: 'b' });

      await upsertBlocks(t.db, [
        {
          environment: 'main',
          id: 'b1',
          itemTypeId: 'post',
          rootId: 'r1',
          blockParentId: 'r1',
          attributes: { title: 'x' },
          updatedAt: new Date(),
          eventId: 'e',
        },
      ]);
      await syncBlocks(t.db, [
        { environment: 'main', rootId: 'r1', mode: 'publish', referencedIds: ['b1'] },
      ]);
      expect((await loadBlocks(t.db, 'main', ['r1'])).get('b1')?.publishedAttributes).toEqual({
        title: 'x',
      });
      await syncBlocks(t.db, [
        { environment: 'main', rootId: 'r1', mode: 'unpublish', referencedIds: [] },
      ]);
      expect((await loadBlocks(t.db, 'main', ['r1'])).size).toBe(0);

      await replaceRecordTexts(
        t.db,
        [],
        [
          {
            environment: 'main',
            recordId: 'r1',
            itemTypeId: 'post',
            version: 'current',
            locale: 'en',
            config: textSearchConfig('en'),
            text: 'running dogs',
          },
        ],
      );
      const { rows } = await t.db.query(
        `SELECT record_id FROM record_texts WHERE document @@ websearch_to_tsquery('english', 'dog')`,
      );
      expect(rows).toHaveLength(1);

      await deleteRecords(t.db, [
        {
          environment: 'main',
          id: 'r1',
          updatedAt: new Date('2026-01-04T00:00:00Z'),
          currentVersion: null,
        },
      ]);
      expect(await findRecord(t.db, 'main', 'r1')).toBeNull();
      expect(
        await upsertRecords(t.db, [write({ updatedAt: new Date('2026-01-03T00:00:00Z') })]),
      ).toEqual(new Map());
      expect(
        await upsertRecords(t.db, [write({ updatedAt: new Date('2026-01-05T00:00:00Z') })]),
      ).toEqual(new Map([['main\u0000r1', { inserted: true }]]));
    });

    it('reads the models of records across environments in one query (loadRecordModels)', async () => {
      // A record of a model the store does not know (records have no foreign key to models).
      await upsertRecords(t.db, [
        write({ id: 'rm1' }),
        write({ environment: 'other', id: 'rm1', itemTypeId: 'gone', eventId: 'e2' }),
      ]);
      expect(
        await loadRecordModels(t.db, [
          { environment: 'main', id: 'rm1' },
          { environment: 'other', id: 'rm1' },
          { environment: 'main', id: 'nope' },
        ]),
      ).toEqual(
        new Map([
          ['main\u0000rm1', { itemTypeId: 'post', itemTypeApiKey: 'post' }],
          ['other\u0000rm1', { itemTypeId: 'gone', itemTypeApiKey: null }],
        ]),
      );
      expect(await loadRecordModels(t.db, [])).toEqual(new Map());
    });
  });
}
