import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineModel, testRecordWrite } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import {
  deleteRecords,
  findRecord,
  loadBatchContext,
  readCommitPosition,
  upsertRecords,
  writeItemBatch,
  writeItemBatchCommitted,
  StaleBatchContextError,
  type Db,
  type NewEvent,
  type RecordText,
  type RecordWrite,
} from '@herald/store';
import { dollarQuoted } from './records.js';

// The write path of migration 006: herald_write_item_batch, herald_batch_context and the
// sharded record_counts.

const at = new Date('2026-03-01T00:00:00Z');

/** An item event on record `recordId` with its record write and its English document. */
function item(
  eventId: string,
  recordId: string,
  over: { mode?: RecordWrite['mode']; model?: string; title?: string } = {},
): { event: NewEvent; record: RecordWrite; texts: RecordText[] } {
  const model = over.model ?? 'post';
  const attributes = { title: over.title ?? `walrus ${recordId}` };
  const entity = {
    type: 'item',
    id: recordId,
    attributes,
    relationships: { item_type: { data: { type: 'item_type', id: model } } },
  };
  const mode = over.mode ?? 'save';
  return {
    event: {
      id: eventId,
      environment: 'main',
      isEnvironmentPrimary: true,
      entityType: 'item',
      eventType: mode === 'publish' ? 'publish' : 'create',
      entityId: recordId,
      itemTypeId: model,
      itemTypeApiKey: model,
      occurredAt: at,
      entity,
      entityJson: JSON.stringify(entity),
      previousEntity: null,
      relatedEntities: [],
    },
    // The very object of the entity: writeItemBatch writes the record from the entity.
    record: testRecordWrite({
      id: recordId,
      itemTypeId: model,
      mode,
      eventId,
      eventType: mode === 'publish' ? 'publish' : 'create',
      attributes,
      createdAt: at,
      updatedAt: at,
      publishedAt: at,
    }),
    texts: (mode === 'publish' ? (['current', 'published'] as const) : (['current'] as const)).map(
      (version) => ({
        environment: 'main',
        recordId,
        itemTypeId: model,
        version,
        locale: 'en',
        config: 'english',
        text: attributes.title,
      }),
    ),
  };
}

function batchOf(items: ReturnType<typeof item>[]) {
  return {
    events: items.map((i) => i.event),
    records: items.map((i) => i.record),
    texts: items.flatMap((i) => i.texts),
  };
}

/** Exact counts per model from the records themselves, and from record_counts' shards. */
async function counts(db: Db): Promise<{ actual: unknown[]; kept: unknown[] }> {
  const actual = await db.query(
    `SELECT item_type_id, count(current_attributes)::int AS cur,
       count(published_attributes)::int AS pub
     FROM records WHERE NOT is_block GROUP BY item_type_id ORDER BY item_type_id`,
  );
  const kept = await db.query(
    `SELECT item_type_id, sum(current_count)::int AS cur, sum(published_count)::int AS pub
     FROM record_counts GROUP BY item_type_id
     HAVING sum(current_count) <> 0 OR sum(published_count) <> 0 ORDER BY item_type_id`,
  );
  return { actual: actual.rows, kept: kept.rows };
}

describe.each(['postgres', 'embedded'] as const)('item batches (%s)', (kind) => {
  const t = suiteTestDb(kind);
  beforeAll(async () => {
    for (const id of ['post', 'page']) {
      await defineModel(t.db, 'main', {
        id,
        apiKey: id,
        fields: [{ apiKey: 'title', fieldType: 'string' }],
      });
    }
  });

  it('writes a record from its event entity, and one document per version of a publish', async () => {
    const published = item('ib-1', 'ib-r1', { mode: 'publish', title: 'published walrus' });
    const draft = item('ib-2', 'ib-r2');
    const result = await writeItemBatch(t.db, batchOf([published, draft]));
    expect(result).toEqual({ inserted: new Set(['ib-1', 'ib-2']), written: 2 });
    const r1 = await findRecord(t.db, 'main', 'ib-r1');
    expect(r1).toMatchObject({
      status: 'published',
      currentAttributes: { title: 'published walrus' },
      publishedAttributes: { title: 'published walrus' },
    });
    expect((await findRecord(t.db, 'main', 'ib-r2'))?.currentAttributes).toEqual({
      title: 'walrus ib-r2',
    });
    const { rows } = await t.db.query(
      `SELECT record_id, version FROM record_texts
       WHERE record_id LIKE 'ib-%' AND document @@ websearch_to_tsquery('english', 'walrus')
       ORDER BY record_id, version`,
    );
    expect(rows).toEqual([
      { record_id: 'ib-r1', version: 'current' },
      { record_id: 'ib-r1', version: 'published' },
      { record_id: 'ib-r2', version: 'current' },
    ]);
    // The event's entity is stored as sent.
    const stored = await t.db.query(`SELECT entity FROM events WHERE id = 'ib-1'`);
    expect(stored.rows[0]).toEqual({ entity: published.event.entity });
  });

  it('writes the records given apart from their entity when they differ', async () => {
    const one = item('ib-3', 'ib-r3');
    await writeItemBatch(t.db, {
      ...batchOf([one]),
      records: [{ ...one.record, attributes: { title: 'from the record' } }],
    });
    expect((await findRecord(t.db, 'main', 'ib-r3'))?.currentAttributes).toEqual({
      title: 'from the record',
    });
  });

  it('leaves the same record as the step-by-step write (both upsert with herald_upsert_records)', async () => {
    // The same history goes to record ib-fast through the one-statement write and to ib-slow
    // through upsertRecords.
    const steps: { mode: RecordWrite['mode']; title: string; minutes: number }[] = [
      { mode: 'save', title: 'first draft', minutes: 1 },
      { mode: 'publish', title: 'published', minutes: 2 },
      { mode: 'save', title: 'edited after publishing', minutes: 3 },
      { mode: 'save', title: 'stale: must not win', minutes: 0 },
      { mode: 'unpublish', title: 'unpublished', minutes: 4 },
    ];
    let n = 0;
    for (const step of steps) {
      const updatedAt = new Date(at.getTime() + step.minutes * 60_000);
      for (const recordId of ['ib-fast', 'ib-slow']) {
        const one = item(`ib-eq-${n++}`, recordId, { mode: step.mode, title: step.title });
        const record = { ...one.record, updatedAt };
        if (recordId === 'ib-fast' && step.mode !== 'unpublish') {
          await writeItemBatch(t.db, { ...batchOf([one]), records: [record] });
        } else {
          await upsertRecords(t.db, [record]);
        }
      }
    }
    // The fast path takes no unpublish (fastPathWrites): both records got it step by step.
    const { rows } = await t.db.query<Record<string, unknown>>(
      `SELECT * FROM records WHERE id IN ('ib-fast', 'ib-slow') ORDER BY id`,
    );
    const comparable = (row: Record<string, unknown>) => {
      const { id: _id, last_event_id: _event, ...rest } = row;
      return rest;
    };
    expect(rows).toHaveLength(2);
    expect(comparable(rows[0]!)).toEqual(comparable(rows[1]!));
    expect(rows[0]).toMatchObject({
      status: 'draft',
      current_attributes: { title: 'unpublished' },
      published_attributes: null,
    });
  });

  it('loads the batch context by key, whatever the size of the events table', async () => {
    // The plan is prepared once per connection: built on an almost empty table it must still
    // read events by key once the table is large (a scan would make this lookup slow, not wrong).
    const before = await loadBatchContext(
      t.db,
      ['ib-1', 'nope'],
      [{ environment: 'main', key: 'post' }],
    );
    expect(before.knownEventIds).toEqual(new Set(['ib-1']));
    expect([...(before.models.get('main')?.keys() ?? [])]).toEqual(['post']);
    await t.db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         occurred_at, entity)
       SELECT 'ib-bulk-' || g, 'main', true, 'item', 'create', now(), '{}'
       FROM generate_series(1, 5000) g`,
    );
    const after = await loadBatchContext(
      t.db,
      ['ib-bulk-17', 'ib-bulk-4999', 'nope'],
      [{ environment: 'main', key: 'page' }],
    );
    expect(after.knownEventIds).toEqual(new Set(['ib-bulk-17', 'ib-bulk-4999']));
    expect([...(after.models.get('main')?.keys() ?? [])]).toEqual(['page']);
  });

  it('writes nothing when the context the batch was validated against changed', async () => {
    const context = await loadBatchContext(t.db, [], [{ environment: 'main', key: 'post' }]);
    const version = context.modelVersions.get('main\u0000post')!;
    const expected = (over: { version?: string; locales?: string[] }) => ({
      environments: [{ id: 'main', locales: over.locales ?? ['en'], isPrimary: true }],
      models: [{ environment: 'main', id: 'post', version: over.version ?? version }],
    });
    await expect(
      writeItemBatch(t.db, {
        ...batchOf([item('ib-s1', 'ib-sr1')]),
        expected: expected({ version: '1' }),
      }),
    ).rejects.toBeInstanceOf(StaleBatchContextError);
    await expect(
      writeItemBatch(t.db, {
        ...batchOf([item('ib-s1', 'ib-sr1')]),
        expected: expected({ locales: ['en', 'fr'] }),
      }),
    ).rejects.toBeInstanceOf(StaleBatchContextError);
    expect(await findRecord(t.db, 'main', 'ib-sr1')).toBeNull();
    expect((await t.db.query(`SELECT 1 FROM events WHERE id = 'ib-s1'`)).rows).toEqual([]);
    expect(
      await writeItemBatch(t.db, { ...batchOf([item('ib-s1', 'ib-sr1')]), expected: expected({}) }),
    ).toEqual({ inserted: new Set(['ib-s1']), written: 1 });
    // Any rewrite of the model (here the same fields again) moves its version.
    await defineModel(t.db, 'main', {
      id: 'post',
      apiKey: 'post',
      fields: [{ apiKey: 'title', fieldType: 'string' }],
    });
    await expect(
      writeItemBatch(t.db, { ...batchOf([item('ib-s2', 'ib-sr2')]), expected: expected({}) }),
    ).rejects.toBeInstanceOf(StaleBatchContextError);
  });

  it('keeps exact per-model counts through concurrent batches, updates and deletes', async () => {
    const batches = Array.from({ length: 12 }, (_, b) =>
      batchOf(
        Array.from({ length: 20 }, (_, i) =>
          item(`ib-c${b}-${i}`, `ib-cr${b}-${i}`, {
            model: b % 3 === 0 ? 'page' : 'post',
            mode: i % 4 === 0 ? 'publish' : 'save',
          }),
        ),
      ),
    );
    await Promise.all(batches.map((batch) => writeItemBatch(t.db, batch)));
    // Updates (publishing drafts) and deletes, concurrently too.
    await Promise.all([
      upsertRecords(
        t.db,
        batches[1]!.records.slice(0, 10).map((r) => ({
          ...r,
          mode: 'publish' as const,
          updatedAt: new Date(at.getTime() + 1000),
        })),
      ),
      deleteRecords(
        t.db,
        batches[2]!.records.map((r) => ({
          environment: 'main',
          id: r.id,
          updatedAt: new Date(at.getTime() + 1000),
          currentVersion: null,
        })),
      ),
      writeItemBatch(t.db, batches[0]!),
    ]);
    const { actual, kept } = await counts(t.db);
    expect(kept).toEqual(actual);
  });
});

describe('item batches and other writers (postgres)', () => {
  const t = suiteTestDb();

  it('never makes a batch wait for another transaction writing the same model', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const isHolding = new Promise<void>((resolve) => (holding = resolve));
    // A transaction that wrote a record of `post` (so holds one of its count rows) and stays
    // open until the other batch is done.
    const open = t.db.transaction(async (tx) => {
      await upsertRecords(tx, [item('ib-h1', 'ib-hr1').record]);
      holding();
      await held;
    });
    await isHolding;
    await writeItemBatch(t.db, batchOf([item('ib-h2', 'ib-hr2')]));
    release();
    await open;
    const { actual, kept } = await counts(t.db);
    expect(kept).toEqual(actual);
    const shards = await t.db.query(
      `SELECT count(*)::int AS n FROM record_counts WHERE item_type_id = 'post'`,
    );
    expect((shards.rows[0] as { n: number }).n).toBeGreaterThan(1);
  });
});

describe('the write with its commit position in one round trip (postgres)', () => {
  const t = suiteTestDb();
  // One connection: a script that failed must leave it as clean as it found it.
  let one: Db;
  beforeAll(async () => {
    await defineModel(t.db, 'main', {
      id: 'post',
      apiKey: 'post',
      fields: [{ apiKey: 'title', fieldType: 'string' }],
    });
    one = t.connect();
  });
  afterAll(async () => {
    await one?.close();
  });

  it('commits what writeItemBatch writes and reads the position after the commit', async () => {
    const before = await readCommitPosition(t.db);
    const written = await writeItemBatchCommitted(one, batchOf([item('ic-1', 'ic-r1')]));
    const after = await readCommitPosition(t.db);
    expect(written.inserted).toEqual(new Set(['ic-1']));
    expect(written.written).toBe(1);
    // Read after the commit returned: past its record, so past everything before it.
    expect(written.position).toBeGreaterThan(before);
    expect(written.position).toBeLessThanOrEqual(after);
    // Committed: another connection sees the event and its record.
    expect((await t.db.query(`SELECT 1 FROM events WHERE id = 'ic-1'`)).rows).toHaveLength(1);
    expect(await findRecord(t.db, 'main', 'ic-r1')).toMatchObject({ status: 'draft' });
    // A repeated event is a duplicate, as with writeItemBatch.
    const again = await writeItemBatchCommitted(one, batchOf([item('ic-1', 'ic-r1')]));
    expect(again.inserted).toEqual(new Set());
  });

  it('quotes any text whole, whichever tags it holds or ends with', async () => {
    for (const text of [
      '',
      'plain',
      'a $j$ b',
      'ends in $j',
      'ends in $',
      '$j$ $j0$ $j1',
      "it's \\",
    ]) {
      const { rows } = await one.query<{ back: string }>(
        `SELECT ${dollarQuoted(text)}::text AS back`,
      );
      expect(rows[0]!.back).toBe(text);
    }
  });

  it('writes nothing on a stale context or a refused write, and leaves its connection clean', async () => {
    const context = await loadBatchContext(t.db, [], [{ environment: 'main', key: 'post' }]);
    await expect(
      writeItemBatchCommitted(one, {
        ...batchOf([item('ic-s1', 'ic-sr1')]),
        expected: {
          environments: [{ id: 'main', locales: ['en'], isPrimary: true }],
          models: [{ environment: 'main', id: 'post', version: '1' }],
        },
      }),
    ).rejects.toBeInstanceOf(StaleBatchContextError);
    expect(context.modelVersions.get('main\u0000post')).not.toBe('1');
    // Refused inside the transaction (a position past the integer column's range): rolled back,
    // and the one connection answers the next statement.
    const refused = item('ic-f1', 'ic-fr1');
    await expect(
      writeItemBatchCommitted(one, {
        ...batchOf([refused]),
        records: [{ ...refused.record, position: 2 ** 40 }],
      }),
    ).rejects.toThrow(/out of range/);
    expect((await one.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    for (const id of ['ic-s1', 'ic-f1']) {
      expect((await t.db.query('SELECT 1 FROM events WHERE id = $1', [id])).rows).toEqual([]);
    }
  });
});
