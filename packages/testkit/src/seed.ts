import { createHash } from 'node:crypto';
import type { ItemVersion, ModelInfo } from '@herald/contract';
import {
  buildSearchTexts,
  loadModels,
  replaceRecordTexts,
  syncBlocks,
  textSearchConfig,
  upsertBlocks,
  upsertEnvironment,
  upsertModel,
  upsertRecords,
  type Db,
  type RecordMode,
  type RecordWrite,
} from '@herald/store';

/**
 * Writes models and records through the store's repositories, the way the events path does
 * (docs/api.md, POST /events): for the store's own tests, and for the read service's, which need
 * records without the ingest service.
 */

export interface SeedField {
  apiKey: string;
  fieldType: string;
  localized?: boolean;
}

export interface SeedModel {
  id: string;
  apiKey: string;
  /** Default: the api_key. */
  name?: string;
  sortable?: boolean;
  tree?: boolean;
  modularBlock?: boolean;
  fields: SeedField[];
}

export async function defineModel(db: Db, environment: string, model: SeedModel): Promise<void> {
  await upsertModel(
    db,
    environment,
    {
      id: model.id,
      apiKey: model.apiKey,
      name: model.name ?? model.apiKey,
      modularBlock: model.modularBlock ?? false,
      sortable: model.sortable ?? false,
      tree: model.tree ?? false,
      draftModeActive: true,
      attributes: {},
    },
    model.fields.map((f, position) => ({
      apiKey: f.apiKey,
      fieldType: f.fieldType,
      localized: f.localized ?? false,
      id: null,
      label: null,
      position,
      attributes: {},
    })),
  );
}

export interface SeedBlock {
  id: string;
  itemTypeId: string;
  /** The record or block whose field holds it. */
  parentId: string;
  attributes: Record<string, unknown>;
}

export interface SeedRecord {
  id: string;
  itemTypeId: string;
  attributes: Record<string, unknown>;
  mode: RecordMode;
  createdAt: Date;
  updatedAt?: Date;
  position?: number | null;
  parentId?: string | null;
  isValid?: boolean;
  blocks?: SeedBlock[];
}

/** A record write: record r1 of model post in main, saved, valid; override what the test is about. */
export function testRecordWrite(overrides: Partial<RecordWrite> = {}): RecordWrite {
  return {
    environment: 'main',
    id: 'r1',
    itemTypeId: 'post',
    mode: 'save',
    eventId: 'e1',
    eventType: 'create',
    attributes: { title: 'a' },
    parentId: null,
    position: null,
    creator: null,
    createdAt: new Date('2026-01-01T00:00:00Z'),
    updatedAt: new Date('2026-01-01T00:00:00Z'),
    publishedAt: new Date('2026-01-02T00:00:00Z'),
    firstPublishedAt: null,
    publicationScheduledAt: null,
    unpublishingScheduledAt: null,
    isValid: true,
    isCurrentVersionValid: true,
    isPublishedVersionValid: true,
    currentVersion: null,
    stage: null,
    ...overrides,
  };
}

/** One record event: the record, its blocks, and its full-text documents. */
export async function putRecord(
  db: Db,
  environment: string,
  locales: readonly string[],
  record: SeedRecord,
): Promise<void> {
  const updatedAt = record.updatedAt ?? record.createdAt;
  await db.transaction(async (tx) => {
    await upsertRecords(tx, [
      testRecordWrite({
        environment,
        id: record.id,
        itemTypeId: record.itemTypeId,
        mode: record.mode,
        eventId: `evt-${record.id}-${updatedAt.getTime()}`,
        eventType: record.mode === 'publish' ? 'publish' : 'update',
        attributes: record.attributes,
        parentId: record.parentId ?? null,
        position: record.position ?? null,
        creator: { type: 'access_token', id: '1' },
        createdAt: record.createdAt,
        updatedAt,
        publishedAt: updatedAt,
        isValid: record.isValid ?? true,
        isCurrentVersionValid: record.isValid ?? true,
        isPublishedVersionValid: record.isValid ?? true,
        currentVersion: String(updatedAt.getTime()),
      }),
    ]);
    const blocks = record.blocks ?? [];
    await upsertBlocks(
      tx,
      blocks.map((b) => ({
        environment,
        id: b.id,
        itemTypeId: b.itemTypeId,
        rootId: record.id,
        blockParentId: b.parentId,
        attributes: b.attributes,
        updatedAt,
        eventId: `evt-${record.id}`,
      })),
    );
    await syncBlocks(tx, [
      { environment, rootId: record.id, mode: record.mode, referencedIds: blocks.map((b) => b.id) },
    ]);
    const modelIds = new Set([record.itemTypeId, ...blocks.map((b) => b.itemTypeId)]);
    const models: Map<string, ModelInfo> = await loadModels(tx, environment, [...modelIds]);
    const texts = buildSearchTexts({
      itemTypeId: record.itemTypeId,
      attributes: record.attributes,
      locales,
      models,
      blocks: new Map(blocks.map((b) => [b.id, b])),
    });
    const versions: ItemVersion[] =
      record.mode === 'publish' ? ['current', 'published'] : ['current'];
    const cleared: ItemVersion[] = record.mode === 'save' ? ['current'] : ['current', 'published'];
    await replaceRecordTexts(
      tx,
      [{ environment, recordId: record.id, versions: cleared }],
      versions.flatMap((version) =>
        [...texts].map(([locale, text]) => ({
          environment,
          recordId: record.id,
          itemTypeId: record.itemTypeId,
          version,
          locale,
          config: textSearchConfig(locale),
          text,
        })),
      ),
    );
  });
}

/**
 * A haystack for slow reads: model `doc` (id m_doc, a text field `body`) in `main`, with `count`
 * published records (d0, d1, …) of 25 hex words (~1 KB) each, written 500 at a time. No body holds
 * a "!", so a pattern ending in one must read them all.
 */
export async function seedDocs(db: Db, count: number): Promise<void> {
  await upsertEnvironment(db, 'main', ['en']);
  await defineModel(db, 'main', {
    id: 'm_doc',
    apiKey: 'doc',
    fields: [{ apiKey: 'body', fieldType: 'text' }],
  });
  const at = new Date(Date.UTC(2024, 0, 1));
  for (let start = 0; start < count; start += 500) {
    await upsertRecords(
      db,
      Array.from({ length: Math.min(500, count - start) }, (_, i) => {
        const id = `d${start + i}`;
        const body = Array.from({ length: 25 }, (_, j) =>
          createHash('sha1').update(`${id}:${j}`).digest('hex'),
        ).join(' ');
        return testRecordWrite({
          id,
          itemTypeId: 'm_doc',
          mode: 'publish',
          eventId: `evt-${id}`,
          eventType: 'publish',
          attributes: { body },
          createdAt: at,
          updatedAt: at,
          publishedAt: at,
          currentVersion: '1',
        });
      }),
    );
  }
}
