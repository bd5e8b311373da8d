/**
 * bench:embedded's data set, written through the store's repositories in batches (the same rows
 * the events path writes): model-0 (title, body) with `records` published records whose bodies
 * are 40 pseudo-words of 1,728 (a word is in ~2 % of them), their full-text documents, and one
 * webhook on model-0's updates to the receiver.
 */
import { createHash } from 'node:crypto';
import {
  buildSearchTexts,
  insertWebhook,
  loadModels,
  replaceRecordTexts,
  textSearchConfig,
  upsertEnvironment,
  upsertRecords,
  type Db,
} from '@herald/store';
import { defineModel, testRecordWrite } from '@herald/testkit';
import { itemWebhook } from '../delivery/fixtures.js';

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'de', 'pa', 'zu', 'be'];
const WORDS = SYLLABLES.flatMap((a) => SYLLABLES.flatMap((b) => SYLLABLES.map((c) => a + b + c)));

/** The word the searches look for (as frequent as any other). */
export const SEARCH_WORD = WORDS[777]!;

function words(id: string, count: number): string {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const hash = createHash('sha1').update(`${id}:${i}`).digest();
    for (let j = 0; j + 1 < hash.length && out.length < count; j += 2) {
      out.push(WORDS[hash.readUInt16BE(j) % WORDS.length]!);
    }
  }
  return out.join(' ');
}

const BATCH = 500;

export async function seed(db: Db, records: number, receiverUrl: string): Promise<void> {
  await upsertEnvironment(db, 'main', ['en']);
  await defineModel(db, 'main', {
    id: 'model-0',
    apiKey: 'm0',
    fields: [
      { apiKey: 'title', fieldType: 'string' },
      { apiKey: 'body', fieldType: 'text' },
    ],
  });
  const models = await loadModels(db, 'main', ['model-0']);
  const at = new Date(Date.UTC(2026, 0, 1));
  for (let start = 0; start < records; start += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, records - start) }, (_, i) => {
      const id = `rec-${start + i}`;
      return { id, attributes: { title: `Record ${id}`, body: words(id, 40) } };
    });
    await db.transaction(async (tx) => {
      await upsertRecords(
        tx,
        batch.map((r) =>
          testRecordWrite({
            id: r.id,
            itemTypeId: 'model-0',
            mode: 'publish',
            eventId: `evt-${r.id}`,
            eventType: 'publish',
            attributes: r.attributes,
            createdAt: at,
            updatedAt: at,
            publishedAt: at,
            currentVersion: '1',
          }),
        ),
      );
      await replaceRecordTexts(
        tx,
        [],
        batch.flatMap((r) => {
          const texts = buildSearchTexts({
            itemTypeId: 'model-0',
            attributes: r.attributes,
            locales: ['en'],
            models,
            blocks: new Map(),
          });
          return (['current', 'published'] as const).flatMap((version) =>
            [...texts].map(([locale, text]) => ({
              environment: 'main',
              recordId: r.id,
              itemTypeId: 'model-0',
              version,
              locale,
              config: textSearchConfig(locale),
              text,
            })),
          );
        }),
      );
    });
  }
  await insertWebhook(db, itemWebhook(receiverUrl, 'embedded-bench', ['update'], 0));
}
