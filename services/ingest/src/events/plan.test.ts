import { describe, expect, it } from 'vitest';
import { ApiError, type ModelInfo } from '@herald/contract';
import { recordKey, type Environment, type RecordModel } from '@herald/store';
import { planBatch, type BatchPlan, type Effect, type PlanInput } from './plan.js';
import { validateEventsBody } from './validate-events.js';

const NOW = new Date('2024-05-01T10:00:00.000Z');

const main: Environment = { id: 'main', locales: ['en', 'it'], isPrimary: true };
const sandbox: Environment = { id: 'sandbox', locales: ['en'], isPrimary: false };

function modelInfo(id: string, flags: Partial<ModelInfo> = {}): ModelInfo {
  return {
    id,
    apiKey: id,
    modularBlock: false,
    sortable: false,
    tree: false,
    draftModeActive: false,
    fields: [],
    ...flags,
  };
}

const post = modelInfo('post', {
  draftModeActive: true,
  fields: [
    { apiKey: 'title', fieldType: 'string', localized: false },
    { apiKey: 'tagline', fieldType: 'string', localized: true },
    { apiKey: 'content', fieldType: 'rich_text', localized: false },
  ],
});
const page = modelInfo('page', {
  fields: [{ apiKey: 'title', fieldType: 'string', localized: false }],
});
const section = modelInfo('section', {
  modularBlock: true,
  fields: [{ apiKey: 'heading', fieldType: 'string', localized: false }],
});
const ranked = modelInfo('ranked', { sortable: true });
const folder = modelInfo('folder', { tree: true });

/** The models stored when the batch is read. */
function storedModels(): Map<string, Map<string, ModelInfo>> {
  const byId = (models: ModelInfo[]) => new Map(models.map((m) => [m.id, m]));
  return new Map([
    ['main', byId([post, page, section, ranked, folder])],
    ['sandbox', byId([page])],
  ]);
}

let eventCount = 0;
const nextId = () => `evt-${++eventCount}`;

function item(
  eventType: string,
  id: string,
  options: {
    /** null: no relationships (a delete may name only its record). */
    model?: string | null;
    attributes?: Record<string, unknown>;
    meta?: Record<string, unknown>;
    environment?: string;
    occurredAt?: string;
    eventId?: string;
  } = {},
) {
  return {
    type: 'event',
    id: options.eventId ?? nextId(),
    attributes: {
      entity_type: 'item',
      event_type: eventType,
      ...(options.environment && { environment: options.environment }),
      ...(options.occurredAt && { occurred_at: options.occurredAt }),
      entity: {
        type: 'item',
        id,
        attributes: options.attributes ?? {},
        ...(options.model !== null && {
          relationships: {
            item_type: { data: { type: 'item_type', id: options.model ?? 'post' } },
          },
        }),
        ...(options.meta && { meta: options.meta }),
      },
    },
  };
}

function model(
  eventType: string,
  id: string,
  options: {
    apiKey?: string;
    flags?: Record<string, boolean>;
    fields?: { apiKey: string; fieldType: string; localized?: boolean; hint?: string }[];
    environment?: string;
  } = {},
) {
  return {
    type: 'event',
    id: nextId(),
    attributes: {
      entity_type: 'item_type',
      event_type: eventType,
      ...(options.environment && { environment: options.environment }),
      entity: {
        type: 'item_type',
        id,
        ...(eventType !== 'delete' && {
          attributes: { name: id, api_key: options.apiKey ?? id, ...options.flags },
        }),
      },
      related_entities: (options.fields ?? []).map((f) => ({
        type: 'field',
        id: `${id}-${f.apiKey}`,
        attributes: {
          api_key: f.apiKey,
          field_type: f.fieldType,
          localized: f.localized ?? false,
          label: f.apiKey,
          position: 1,
          ...(f.hint && { hint: f.hint }),
        },
      })),
    },
  };
}

function environment(eventType: string, id: string, locales?: string[]) {
  return {
    type: 'event',
    id: nextId(),
    attributes: {
      entity_type: 'environment',
      event_type: eventType,
      entity: { type: 'environment', id, ...(locales && { attributes: { locales } }) },
    },
  };
}

/** Plans raw events (validated as POST /events would) against the stored state above. */
function plan(raw: unknown[], input: Partial<Omit<PlanInput, 'events'>> = {}): BatchPlan {
  const events = validateEventsBody({ data: raw });
  return planBatch({
    events,
    ids: events.map((event, i) => event.id ?? `made-up-${i}`),
    storedIds: new Set(),
    requestEnvironment: 'main',
    now: NOW,
    environments: [main, sandbox],
    models: storedModels(),
    ...input,
  });
}

const kinds = (p: BatchPlan) => p.events.map((e) => e.effect.kind);
const itemWrite = (effect: Effect | undefined) => {
  if (effect?.kind !== 'item-write') throw new Error(`not an item write: ${effect?.kind}`);
  return effect;
};
const field = (...args: Parameters<typeof ApiError.field>) => ApiError.field(...args);
const modelPath = (i: number) => `data.${i}.attributes.entity.relationships.item_type.data.id`;
const unknownModel = (i: number) => field(modelPath(i), 'VALIDATION_INCLUSION', 'unknown model');

describe('planBatch: items', () => {
  it('writes items: a save of a draft-mode model, a publish of one without, as the event says', () => {
    const p = plan([
      item('create', 'r1', { model: 'post', attributes: { title: 'Hello' } }),
      item('update', 'r2', { model: 'page' }),
      item('publish', 'r3', { model: 'post' }),
      item('unpublish', 'r4', { model: 'page' }),
    ]);
    expect(p.errors).toEqual([]);
    expect(p.events.map((e) => itemWrite(e.effect).write.mode)).toEqual([
      'save',
      'publish',
      'publish',
      'unpublish',
    ]);
    const first = p.events[0]!;
    expect(first.row).toMatchObject({
      environment: 'main',
      isEnvironmentPrimary: true,
      entityType: 'item',
      eventType: 'create',
      entityId: 'r1',
      itemTypeId: 'post',
      itemTypeApiKey: 'post',
    });
    expect(itemWrite(first.effect).write).toMatchObject({
      environment: 'main',
      id: 'r1',
      itemTypeId: 'post',
      eventId: first.row.id,
      eventType: 'create',
      attributes: { title: 'Hello' },
    });
  });

  it('fills the dates an event leaves out from its occurred_at, then from now', () => {
    const p = plan([
      item('create', 'r1'),
      item('create', 'r2', { occurredAt: '2024-01-02T00:00:00Z' }),
      item('create', 'r3', {
        occurredAt: '2024-01-02T00:00:00Z',
        meta: {
          created_at: '2023-12-01T00:00:00Z',
          updated_at: '2024-01-01T00:00:00Z',
          published_at: '2024-01-01T12:00:00Z',
          current_version: 42,
          is_valid: false,
          stage: 'review',
        },
      }),
    ]);
    const writes = p.events.map((e) => itemWrite(e.effect).write);
    expect(p.events[0]!.row.occurredAt).toEqual(NOW);
    expect(writes[0]).toMatchObject({
      createdAt: NOW,
      updatedAt: NOW,
      publishedAt: NOW,
      firstPublishedAt: null,
      currentVersion: null,
      isValid: true,
      isCurrentVersionValid: true,
      isPublishedVersionValid: true,
      stage: null,
    });
    const occurred = new Date('2024-01-02T00:00:00Z');
    expect(p.events[1]!.row.occurredAt).toEqual(occurred);
    expect(writes[1]).toMatchObject({ createdAt: occurred, updatedAt: occurred, publishedAt: NOW });
    expect(writes[2]).toMatchObject({
      createdAt: new Date('2023-12-01T00:00:00Z'),
      updatedAt: new Date('2024-01-01T00:00:00Z'),
      publishedAt: new Date('2024-01-01T12:00:00Z'),
      currentVersion: '42',
      isValid: false,
      isCurrentVersionValid: false,
      isPublishedVersionValid: false,
      stage: 'review',
    });
  });

  it('refuses an item of an unknown environment, of an unknown model or of a block model', () => {
    const p = plan([
      item('create', 'r1', { environment: 'nowhere' }),
      item('create', 'r2', { model: 'nope' }),
      item('create', 'r3', { model: 'section' }),
      item('create', 'r4', { model: 'post', environment: 'sandbox' }),
    ]);
    expect(p.errors).toEqual([
      field('data.0.attributes.environment', 'VALIDATION_INCLUSION', 'unknown environment'),
      unknownModel(1),
      field(
        modelPath(2),
        'VALIDATION_INCLUSION',
        'is a block model: blocks travel inside their record',
      ),
      unknownModel(3),
    ]);
    expect(kinds(p)).toEqual(['none', 'none', 'none', 'none']);
    // Each is still an event row: the batch is refused as a whole, not event by event.
    expect(p.events.map((e) => e.row.environment)).toEqual(['nowhere', 'main', 'main', 'sandbox']);
  });

  it("checks attributes against the model and the environment's locales, under the event's path", () => {
    const p = plan([
      item('create', 'r1', { attributes: { title: 'ok', nope: 1 } }),
      item('create', 'r2', { attributes: { tagline: { en: 'hi', fr: 'salut' } } }),
      item('create', 'r3', { environment: 'sandbox', model: 'page', attributes: { title: 3 } }),
    ]);
    expect(p.errors).toEqual([
      field(
        'data.0.attributes.entity.attributes.nope',
        'VALIDATION_INCLUSION',
        'unknown field of model post',
      ),
      field(
        'data.1.attributes.entity.attributes.tagline.fr',
        'VALIDATION_INCLUSION',
        "unknown locale (the environment's locales are en, it)",
      ),
      field(
        'data.2.attributes.entity.attributes.title',
        'VALIDATION_TYPE',
        'must be a string or null (field type string)',
      ),
    ]);
  });

  it('takes blocks out of the record, leaving their ids', () => {
    const block = {
      type: 'item',
      id: 'b1',
      attributes: { heading: 'Intro' },
      relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
    };
    const p = plan([item('create', 'r1', { attributes: { content: [block, 'b0'] } })]);
    expect(p.errors).toEqual([]);
    const { write, extracted } = itemWrite(p.events[0]!.effect);
    expect(write.attributes).toEqual({ content: ['b1', 'b0'] });
    expect(extracted.blocks).toEqual([
      { id: 'b1', itemTypeId: 'section', parentId: 'r1', attributes: { heading: 'Intro' } },
    ]);
    expect(extracted.idOnlyRefs).toEqual(['b0']);
  });

  it("keeps a tree record's parent and a sortable record's position", () => {
    const p = plan([
      item('create', 'r1', { model: 'folder', attributes: { parent_id: 'r0', position: 2 } }),
      item('create', 'r2', { model: 'ranked', meta: { position: 5 } }),
      item('create', 'r3', { model: 'page' }),
    ]);
    expect(p.errors).toEqual([]);
    expect(p.events.map((e) => itemWrite(e.effect).write)).toMatchObject([
      { parentId: 'r0', position: 2 },
      { parentId: null, position: 5 },
      { parentId: null, position: null },
    ]);
  });
});

describe('planBatch: item deletes and the models of records', () => {
  const stored = (models: Record<string, RecordModel>): Map<string, RecordModel> =>
    new Map(Object.entries(models).map(([id, m]) => [recordKey('main', id), m]));

  it("deletes a record, giving the event the stored record's model when it names none", () => {
    const p = plan(
      [
        item('delete', 'r1', { model: null, meta: { current_version: 'v7' } }),
        item('delete', 'r2', { model: null }),
        item('delete', 'r3', { model: null }),
        item('delete', 'r4', { model: 'page' }),
      ],
      {
        recordModels: stored({
          r1: { itemTypeId: 'post', itemTypeApiKey: 'post' },
          // A model the batch did not read: its api_key comes with the record.
          r2: { itemTypeId: 'gone', itemTypeApiKey: 'old_key' },
          r4: { itemTypeId: 'post', itemTypeApiKey: 'post' },
        }),
      },
    );
    expect(p.errors).toEqual([]);
    expect(p.events.map((e) => e.effect)).toEqual([
      {
        kind: 'item-delete',
        delete: { environment: 'main', id: 'r1', updatedAt: NOW, currentVersion: 'v7' },
        eventId: expect.any(String),
      },
      {
        kind: 'item-delete',
        delete: { environment: 'main', id: 'r2', updatedAt: NOW, currentVersion: null },
        eventId: expect.any(String),
      },
      {
        kind: 'item-delete',
        delete: { environment: 'main', id: 'r3', updatedAt: NOW, currentVersion: null },
        eventId: expect.any(String),
      },
      {
        kind: 'item-delete',
        delete: { environment: 'main', id: 'r4', updatedAt: NOW, currentVersion: null },
        eventId: expect.any(String),
      },
    ]);
    expect(p.events.map((e) => [e.row.itemTypeId, e.row.itemTypeApiKey])).toEqual([
      ['post', 'post'],
      ['gone', 'old_key'],
      // Not stored: no model.
      [null, null],
      // An event that names its model is taken at its word.
      ['page', 'page'],
    ]);
  });

  it('follows records through the batch: written, deleted, or gone with their model or environment', () => {
    const p = plan(
      [
        item('create', 'r1', { model: 'page' }),
        item('delete', 'r1', { model: null }),
        item('delete', 'r1', { model: null }),
        item('delete', 'r2', { model: null }),
        model('delete', 'post'),
        item('delete', 'r3', { model: null }),
        environment('delete', 'sandbox'),
        environment('create', 'sandbox'),
        item('delete', 'r4', { model: null, environment: 'sandbox' }),
      ],
      {
        recordModels: new Map([
          [recordKey('main', 'r2'), { itemTypeId: 'post', itemTypeApiKey: 'post' }],
          [recordKey('main', 'r3'), { itemTypeId: 'post', itemTypeApiKey: 'post' }],
          [recordKey('sandbox', 'r4'), { itemTypeId: 'page', itemTypeApiKey: 'page' }],
        ]),
      },
    );
    expect(p.errors).toEqual([]);
    expect(p.events.map((e) => e.row.itemTypeId)).toEqual([
      'page',
      // Written earlier in the batch.
      'page',
      // Deleted by the event before.
      null,
      'post',
      'post',
      // Its model was deleted.
      null,
      null,
      null,
      // Its environment was deleted (and made anew).
      null,
    ]);
  });
});

describe('planBatch: models', () => {
  it('creates a model with its fields, which the items after it (only) may use', () => {
    const p = plan([
      item('create', 'r0', { model: 'article', attributes: { headline: 'early' } }),
      model('create', 'article', {
        flags: { draft_mode_active: true },
        fields: [{ apiKey: 'headline', fieldType: 'string', hint: 'short' }],
      }),
      item('create', 'r1', { model: 'article', attributes: { headline: 'Hi' } }),
    ]);
    expect(p.errors).toEqual([unknownModel(0)]);
    expect(p.events[1]!.effect).toEqual({
      kind: 'model-upsert',
      environment: 'main',
      model: {
        id: 'article',
        apiKey: 'article',
        name: 'article',
        modularBlock: false,
        sortable: false,
        tree: false,
        draftModeActive: true,
        attributes: {
          name: 'article',
          api_key: 'article',
          modular_block: false,
          sortable: false,
          tree: false,
          draft_mode_active: true,
        },
      },
      fields: [
        {
          apiKey: 'headline',
          fieldType: 'string',
          localized: false,
          id: 'article-headline',
          label: 'headline',
          position: 1,
          attributes: { hint: 'short' },
        },
      ],
    });
    expect(p.events[1]!.row).toMatchObject({ itemTypeId: 'article', itemTypeApiKey: 'article' });
    expect(itemWrite(p.events[2]!.effect).write).toMatchObject({
      itemTypeId: 'article',
      mode: 'save',
    });
    expect(p.events[2]!.row.itemTypeApiKey).toBe('article');
    expect(p.models.get('main')?.get('article')).toEqual({
      id: 'article',
      apiKey: 'article',
      modularBlock: false,
      sortable: false,
      tree: false,
      draftModeActive: true,
      attributes: expect.any(Object) as unknown,
      name: 'article',
      fields: [{ apiKey: 'headline', fieldType: 'string', localized: false }],
    });
  });

  it("refuses an api_key another model of the environment has, not the model's own", () => {
    const p = plan([
      model('create', 'blog', { apiKey: 'post' }),
      model('update', 'post', { fields: [{ apiKey: 'body', fieldType: 'text' }] }),
      model('create', 'blog', { apiKey: 'post', environment: 'sandbox' }),
      model('create', 'other', { apiKey: 'post', environment: 'sandbox' }),
    ]);
    expect(p.errors).toEqual([
      field(
        'data.0.attributes.entity.attributes.api_key',
        'VALIDATION_UNIQUENESS',
        'another model (post) already has the api_key post',
      ),
      field(
        'data.3.attributes.entity.attributes.api_key',
        'VALIDATION_UNIQUENESS',
        'another model (blog) already has the api_key post',
      ),
    ]);
    expect(kinds(p)).toEqual(['none', 'model-upsert', 'model-upsert', 'none']);
  });

  it('deletes a model: the items after it no longer find it', () => {
    const p = plan([model('delete', 'page'), item('create', 'r1', { model: 'page' })]);
    expect(p.events[0]!.effect).toEqual({ kind: 'model-delete', environment: 'main', id: 'page' });
    // The api_key is looked up once the model is gone.
    expect(p.events[0]!.row).toMatchObject({ itemTypeId: 'page', itemTypeApiKey: null });
    expect(p.errors).toEqual([unknownModel(1)]);
    expect(p.models.get('main')?.has('page')).toBe(false);
    expect(p.models.get('sandbox')?.has('page')).toBe(true);
  });
});

describe('planBatch: environments', () => {
  it('creates and updates environments, which the events after them may use', () => {
    const p = plan([
      environment('create', 'feature'),
      model('create', 'note', {
        environment: 'feature',
        fields: [{ apiKey: 'text', fieldType: 'text', localized: true }],
      }),
      item('create', 'r1', {
        environment: 'feature',
        model: 'note',
        attributes: { text: { en: 'x' } },
      }),
      environment('update', 'sandbox', ['en', 'de']),
      item('create', 'r2', { environment: 'sandbox', model: 'page' }),
    ]);
    expect(p.errors).toEqual([]);
    expect(p.events.map((e) => e.effect)).toMatchObject([
      { kind: 'environment-upsert', id: 'feature', locales: undefined },
      { kind: 'model-upsert', environment: 'feature' },
      { kind: 'item-write' },
      { kind: 'environment-upsert', id: 'sandbox', locales: ['en', 'de'] },
      { kind: 'item-write' },
    ]);
    expect(p.events[0]!.row).toMatchObject({ environment: 'feature', isEnvironmentPrimary: false });
    expect(p.environments.get('feature')).toEqual({ locales: ['en'], isPrimary: false });
    expect(p.environments.get('sandbox')).toEqual({ locales: ['en', 'de'], isPrimary: false });
    // An update without locales keeps the environment's.
    const kept = plan([environment('update', 'main')]);
    expect(kept.environments.get('main')).toEqual({ locales: ['en', 'it'], isPrimary: true });
  });

  it('promotes an environment: the rows after it see the new primary', () => {
    const p = plan([
      item('create', 'r1', { environment: 'sandbox', model: 'page' }),
      environment('promote', 'sandbox'),
      item('create', 'r2', { environment: 'sandbox', model: 'page' }),
      item('create', 'r3', { model: 'page' }),
      environment('promote', 'nowhere'),
    ]);
    expect(p.events.map((e) => e.row.isEnvironmentPrimary)).toEqual([
      false,
      true,
      true,
      false,
      false,
    ]);
    expect(kinds(p)).toEqual([
      'item-write',
      'environment-promote',
      'item-write',
      'item-write',
      'none',
    ]);
    expect(p.errors).toEqual([
      field('data.4.attributes.entity.id', 'VALIDATION_INCLUSION', 'unknown environment'),
    ]);
    expect(p.environments.get('main')?.isPrimary).toBe(false);
    expect(p.environments.get('sandbox')?.isPrimary).toBe(true);
  });

  it('refuses to delete the primary environment; deletes another with its models', () => {
    const p = plan([
      environment('delete', 'main'),
      environment('delete', 'sandbox'),
      item('create', 'r1', { environment: 'sandbox', model: 'page' }),
    ]);
    expect(p.errors).toEqual([
      field(
        'data.0.attributes.entity.id',
        'VALIDATION_INCLUSION',
        'the primary environment cannot be deleted; promote another one first',
      ),
      field('data.2.attributes.environment', 'VALIDATION_INCLUSION', 'unknown environment'),
    ]);
    expect(kinds(p)).toEqual(['none', 'environment-delete', 'none']);
    expect(p.environments.has('sandbox')).toBe(false);
    expect(p.models.has('sandbox')).toBe(false);
  });
});

describe('planBatch: the batch', () => {
  it("plans each id's first occurrence only, and none of the ids already stored", () => {
    const p = plan(
      [
        item('create', 'r1', { eventId: 'a' }),
        item('create', 'r2', { eventId: 'b' }),
        // Duplicates: never planned, so their problems are not reported either.
        item('create', 'r3', { eventId: 'a', model: 'nope' }),
        item('create', 'r4', { eventId: 'c', model: 'nope' }),
        item('create', 'r5', { eventId: 'd' }),
      ],
      { storedIds: new Set(['c']) },
    );
    expect(p.errors).toEqual([]);
    expect(p.events.map((e) => [e.row.id, e.row.entityId])).toEqual([
      ['a', 'r1'],
      ['b', 'r2'],
      ['d', 'r5'],
    ]);
  });

  it('stores the events of other entities without effect', () => {
    const p = plan([
      {
        type: 'event',
        attributes: {
          entity_type: 'upload',
          event_type: 'create',
          environment: 'sandbox',
          entity: { type: 'upload', id: 'u1' },
        },
      },
    ]);
    expect(p.errors).toEqual([]);
    expect(p.events).toMatchObject([
      {
        row: {
          id: 'made-up-0',
          environment: 'sandbox',
          isEnvironmentPrimary: false,
          entityType: 'upload',
          itemTypeId: null,
          itemTypeApiKey: null,
          occurredAt: NOW,
          previousEntity: null,
        },
        effect: { kind: 'none' },
      },
    ]);
  });

  it('changes nothing it was given', () => {
    const environments = [structuredClone(main), structuredClone(sandbox)];
    const models = storedModels();
    const recordModels = new Map([
      [recordKey('main', 'r9'), { itemTypeId: 'page', itemTypeApiKey: 'page' }],
    ]);
    const before = structuredClone({ environments, models, recordModels });
    const p = plan(
      [
        environment('promote', 'sandbox'),
        environment('update', 'sandbox', ['fr']),
        model('create', 'article'),
        model('delete', 'page'),
        item('delete', 'r9', { model: null }),
        environment('create', 'feature'),
      ],
      { environments, models, recordModels },
    );
    expect(p.errors).toEqual([]);
    expect({ environments, models, recordModels }).toEqual(before);
  });
});
