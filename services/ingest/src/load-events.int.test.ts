import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { findRecord } from '@herald/store';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from './app.js';
import { BatchRejectedError, countEvents, loadEvents } from './load-events.js';

const it = appTest(createApp, { role: 'producer' });

let dir: string;
it.beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-load-'));
  return () => rm(dir, { recursive: true, force: true });
});

const model = {
  type: 'event',
  id: 'model-note',
  attributes: {
    entity_type: 'item_type',
    event_type: 'create',
    entity: { type: 'item_type', id: 'note', attributes: { name: 'Note', api_key: 'note' } },
    related_entities: [
      { type: 'field', id: 'f', attributes: { api_key: 'text', field_type: 'text' } },
    ],
  },
};
const note = (n: number, attributes: Record<string, unknown> = { text: `note ${n}` }) => ({
  type: 'event',
  id: `load-${n}`,
  attributes: {
    entity_type: 'item',
    event_type: 'create',
    entity: {
      type: 'item',
      id: `note-${n}`,
      attributes,
      relationships: { item_type: { data: { type: 'item_type', id: 'note' } } },
    },
  },
});

describe('loadEvents', () => {
  it('loads an NDJSON file in batches, and reports duplicates on a second run', async ({
    api,
    db,
  }) => {
    const file = join(dir, 'events.ndjson');
    const events = [model, ...Array.from({ length: 250 }, (_, n) => note(n))];
    await writeFile(file, `${events.map((e) => JSON.stringify(e)).join('\n')}\n\n`);
    expect(await countEvents(file)).toBe(251);
    const progress: number[] = [];
    const options = { file, url: api.url, token: api.token, batchSize: 40, concurrency: 1 };
    const first = await loadEvents({ ...options, onProgress: (sent) => progress.push(sent) });
    expect(first).toMatchObject({ accepted: 251, duplicate: 0, batches: 7 });
    expect(progress.at(-1)).toBe(251);
    expect(await findRecord(db, 'main', 'note-249')).not.toBeNull();
    const second = await loadEvents({ ...options, concurrency: 3 });
    expect(second).toMatchObject({ accepted: 0, duplicate: 251 });
  });

  it('loads a JSON file ({"data": [...]}) and stops at a batch refused for good', async ({
    api,
    db,
  }) => {
    const file = join(dir, 'events.json');
    await writeFile(file, JSON.stringify({ data: [note(1000), note(1001)] }));
    expect(
      await loadEvents({ file, url: api.url, token: api.token, batchSize: 10, concurrency: 2 }),
    ).toMatchObject({
      accepted: 2,
    });
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify([note(2000), note(2001, { nope: 1 })]));
    const error = await loadEvents({
      file: bad,
      url: api.url,
      token: api.token,
      batchSize: 10,
      concurrency: 1,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatchRejectedError);
    expect((error as BatchRejectedError).status).toBe(422);
    expect((error as BatchRejectedError).body).toContain(
      'data.1.attributes.entity.attributes.nope',
    );
    expect(await findRecord(db, 'main', 'note-2000')).toBeNull();
  });

  it('reports a partial failure exactly: what was stored, each refused event by its line, where to resume', async ({
    api,
    db,
  }) => {
    const file = join(dir, 'partial.ndjson');
    // Lines 1-4 (a batch of 4) are fine; line 6 and line 8 are refused, in the second batch.
    const events = [
      note(3000),
      note(3001),
      note(3002),
      note(3003),
      note(3004),
      note(3005, { nope: 1 }),
      note(3006),
      note(3007, { text: 7 }),
      note(3008),
    ];
    await writeFile(file, events.map((e) => JSON.stringify(e)).join('\n'));
    const error = (await loadEvents({
      file,
      url: api.url,
      token: api.token,
      batchSize: 4,
      concurrency: 1,
    }).catch((e: unknown) => e)) as BatchRejectedError;
    expect(error).toBeInstanceOf(BatchRejectedError);
    expect(error.summary).toMatchObject({ accepted: 4, duplicate: 0, batches: 1 });
    expect(error.refused.map((refused) => refused.place)).toEqual(['line 6', 'line 8']);
    expect(error.refused[0]!.reason).toContain('nope');
    expect(error.resumeFrom).toBe('line 5');
    expect(await findRecord(db, 'main', 'note-3003')).not.toBeNull();
    expect(await findRecord(db, 'main', 'note-3004')).toBeNull();
  });
});
