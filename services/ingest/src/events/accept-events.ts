import { randomUUID } from 'node:crypto';
import {
  ApiError,
  BLOCK_FIELD_TYPES,
  type EntityType,
  type ErrorEntry,
  type EventType,
  type ItemVersion,
  type ModelInfo,
} from '@herald/contract';
import {
  deleteEnvironment,
  deleteModel,
  deleteRecords,
  insertEvents,
  loadBatchContext,
  loadBlocks,
  loadModels,
  loadRecordModels,
  promoteEnvironment,
  recordKey,
  replaceRecordTexts,
  syncBlocks,
  upsertBlocks,
  upsertEnvironment,
  upsertModel,
  upsertRecords,
  writeItemBatch,
  StaleBatchContextError,
  type BatchContext,
  type BlockSync,
  type BlockWrite,
  type Db,
  type Environment,
  type FieldWrite,
  type ModelWrite,
  type NewEvent,
  type Queryable,
  type RecordDelete,
  type RecordModel,
  type RecordText,
  type RecordWrite,
  type TextBlock,
} from '@herald/store';
import type { ValidEvent } from './validate-events.js';
import type { BatchContextCache } from './context-cache.js';
import { extractItem, type ExtractedItem } from './item-values.js';
import { searchRows } from './search-rows.js';

export interface AcceptedEvent {
  id: string;
  status: 'accepted' | 'duplicate';
  entityType: EntityType;
  eventType: EventType;
}

export interface AcceptResult {
  events: AcceptedEvent[];
  /** Ids stored by this call, in request order: the ones to enqueue. */
  acceptedIds: string[];
  /** An environment event was applied (the environment cache is stale). */
  environmentsChanged: boolean;
}

interface EnvState {
  locales: string[];
  isPrimary: boolean;
}

type Plan =
  | { kind: 'item-write'; write: RecordWrite; extracted: ExtractedItem }
  | { kind: 'item-delete'; delete: RecordDelete }
  | { kind: 'model-upsert'; environment: string; model: ModelWrite; fields: FieldWrite[] }
  | { kind: 'model-delete'; environment: string; id: string }
  | { kind: 'environment-upsert'; id: string; locales: string[] | undefined }
  | { kind: 'environment-promote'; id: string }
  | { kind: 'environment-delete'; id: string }
  | { kind: 'none' };

type ItemPlan = Extract<Plan, { kind: 'item-write' | 'item-delete' }>;

/**
 * Accepts a validated batch durably (API.md §5, ARCHITECTURE.md): in one transaction, stores the
 * events (a repeated id is a duplicate, never stored or applied twice) and applies the new ones
 * to the record store, validating item attributes against their models. Any problem throws a
 * 422 and rolls the whole batch back. Enqueuing is the caller's job, after this resolves.
 */
export async function acceptEvents(
  db: Db,
  events: readonly ValidEvent[],
  requestEnvironment: string,
  now = new Date(),
  cache?: BatchContextCache,
): Promise<AcceptResult> {
  if (cache) {
    const cached = await acceptFromCache(db, events, requestEnvironment, now, cache);
    if (cached) return cached;
  }
  const ids = events.map((event) => event.id ?? randomUUID());
  const firstIndex = firstIndexes(ids);

  // Planning reads outside the transaction: it took no locks inside one either, and the
  // writes re-check what matters (ON CONFLICT on event ids, the staleness rule on records).
  const planner = new Planner(now, requestEnvironment);
  const context = await planner.load(db, events, [...firstIndex.keys()]);
  const stored = context.knownEventIds;
  const fresh = events.flatMap((event, i) => {
    const id = ids[i]!;
    return firstIndex.get(id) === i && !stored.has(id) ? [{ event, id }] : [];
  });
  const planned = fresh.map(({ event, id }) => planner.plan(event, id));
  if (planner.errors.length > 0) throw ApiError.many(planner.errors.slice(0, 100));

  let inserted: Set<string>;
  const fast = fastPathWrites(planned, planner);
  if (fast) {
    // One statement, one commit: the common batch of item saves on distinct records.
    inserted = (await writeItemBatch(db, { events: planned.map((p) => p.row), ...fast })).inserted;
  } else {
    inserted = await db.transaction(async (tx) => {
      const ids = await insertEvents(
        tx,
        planned.map((p) => p.row),
      );
      await applyPlans(
        tx,
        planned.filter((p) => ids.has(p.row.id)).map((p) => p.plan),
        planner,
      );
      return ids;
    });
  }
  if (cache) {
    // A batch of item events leaves environments and models as they were read.
    if (events.every((event) => event.kind === 'item')) cache.remember(context);
    else cache.clear();
  }
  return acceptResult(events, ids, firstIndex, planned, inserted);
}

/** The index of each id's first occurrence (later ones are duplicates within the batch). */
function firstIndexes(ids: readonly string[]): Map<string, number> {
  const firstIndex = new Map<string, number>();
  ids.forEach((id, i) => {
    if (!firstIndex.has(id)) firstIndex.set(id, i);
  });
  return firstIndex;
}

function acceptResult(
  events: readonly ValidEvent[],
  ids: readonly string[],
  firstIndex: ReadonlyMap<string, number>,
  planned: readonly { row: NewEvent; plan: Plan }[],
  inserted: ReadonlySet<string>,
): AcceptResult {
  return {
    events: events.map((event, i) => ({
      id: ids[i]!,
      status: inserted.has(ids[i]!) && firstIndex.get(ids[i]!) === i ? 'accepted' : 'duplicate',
      entityType: event.attributes.entity_type,
      eventType: event.attributes.event_type,
    })),
    acceptedIds: planned.map((p) => p.row.id).filter((id) => inserted.has(id)),
    environmentsChanged: planned.some(
      (p) => inserted.has(p.row.id) && p.plan.kind.startsWith('environment-'),
    ),
  };
}

/**
 * A batch of item events taking writeItemBatch's path, validated against the cached context
 * instead of a fresh pre-read; undefined when it cannot: the cache lacks something, the batch is
 * not one for the fast path, it has validation errors (the full path words them, knowing which
 * events are duplicates and need none), or the write found the context changed. Events already
 * stored are planned too: the write skips them (ON CONFLICT) with their records.
 */
async function acceptFromCache(
  db: Db,
  events: readonly ValidEvent[],
  requestEnvironment: string,
  now: Date,
  cache: BatchContextCache,
): Promise<AcceptResult | undefined> {
  if (!events.every((event) => event.kind === 'item')) return undefined;
  const planner = new Planner(now, requestEnvironment);
  const cached = cache.lookup(
    new Set(events.map((event) => planner.environmentOf(event))),
    planner.modelKeys(events).map(({ environment, key }) => ({ environment, id: key })),
  );
  if (!cached) return undefined;
  planner.use(cached.environments, cached.models);
  const ids = events.map((event) => event.id ?? randomUUID());
  const firstIndex = firstIndexes(ids);
  const planned = events.flatMap((event, i) =>
    firstIndex.get(ids[i]!) === i ? [planner.plan(event, ids[i]!)] : [],
  );
  if (planner.errors.length > 0) return undefined;
  const fast = fastPathWrites(planned, planner);
  if (!fast) return undefined;
  let inserted: Set<string>;
  try {
    inserted = (
      await writeItemBatch(db, {
        events: planned.map((p) => p.row),
        ...fast,
        expected: cached.expected,
      })
    ).inserted;
  } catch (error) {
    if (!(error instanceof StaleBatchContextError)) throw error;
    cache.clear();
    return undefined;
  }
  return acceptResult(events, ids, firstIndex, planned, inserted);
}

/**
 * The records and documents of a batch that writeItemBatch can take in one statement, or
 * undefined: only item saves and publishes (and events that store nothing), each record once,
 * of models without block fields (so no stored blocks can need reconciling).
 */
function fastPathWrites(
  planned: readonly { row: NewEvent; plan: Plan }[],
  planner: Planner,
): { records: RecordWrite[]; texts: RecordText[] } | undefined {
  const records: RecordWrite[] = [];
  const texts: RecordText[] = [];
  const seen = new Set<string>();
  for (const { row, plan } of planned) {
    if (plan.kind === 'none') continue;
    if (plan.kind !== 'item-write' || plan.write.mode === 'unpublish') return undefined;
    const { write } = plan;
    const key = recordKey(write.environment, write.id);
    const model = planner.modelsOf(write.environment).get(write.itemTypeId);
    if (seen.has(key) || !model || model.fields.some((f) => BLOCK_FIELD_TYPES.has(f.fieldType))) {
      return undefined;
    }
    seen.add(key);
    // Without block fields, the validated attributes are the entity's, key for key: handing
    // writeItemBatch that very object lets it write the record from the event's entity.
    const entityAttributes = (row.entity as { attributes?: Record<string, unknown> }).attributes;
    records.push(entityAttributes ? { ...write, attributes: entityAttributes } : write);
    // Empty documents too: writeItemBatch replaces the stored ones with these.
    texts.push(
      ...searchRows(write, {
        locales: planner.environments.get(write.environment)?.locales ?? [],
        models: planner.modelsOf(write.environment),
        blocks: NO_BLOCKS,
      }),
    );
  }
  return records.length > 0 ? { records, texts } : undefined;
}

const NO_BLOCKS: ReadonlyMap<string, TextBlock> = new Map();

/** Model ids referenced by expanded blocks anywhere inside a record's attributes. */
function collectBlockModelIds(value: unknown, out: Set<string>, depth = 0): void {
  if (!value || typeof value !== 'object' || depth > 40) return;
  if (Array.isArray(value)) {
    for (const v of value) collectBlockModelIds(v, out, depth + 1);
    return;
  }
  const record = value as Record<string, unknown>;
  const id = (record['relationships'] as { item_type?: { data?: { id?: unknown } } } | undefined)
    ?.item_type?.data?.id;
  if (typeof id === 'string') out.add(id);
  for (const v of Object.values(record)) collectBlockModelIds(v, out, depth + 1);
}

const date = (value: string | null | undefined): Date | null => (value ? new Date(value) : null);

/**
 * Walks the batch in order against a simulated state of environments and models, so that an
 * item event may use a model created earlier in the same batch. Produces the event rows and what
 * each event does to the store, collecting every validation problem.
 */
class Planner {
  readonly errors: ErrorEntry[] = [];
  readonly environments = new Map<string, EnvState>();
  /** Models by environment, by id. */
  readonly models = new Map<string, Map<string, ModelInfo>>();
  /**
   * Records' models by environment, by record id, for the item events that name only their
   * record (deletes may): as stored when the batch was read, then as the batch writes and
   * deletes records and models. Undefined (and not kept) when no event of the batch needs it.
   */
  private recordModels: Map<string, Map<string, RecordModel>> | undefined;

  constructor(
    private readonly now: Date,
    private readonly requestEnvironment: string,
  ) {}

  environmentOf(event: ValidEvent): string {
    if (event.kind === 'environment') return event.environmentEntity.id;
    return event.attributes.environment ?? this.requestEnvironment;
  }

  modelsOf(environment: string): Map<string, ModelInfo> {
    let models = this.models.get(environment);
    if (!models) {
      models = new Map();
      this.models.set(environment, models);
    }
    return models;
  }

  /** The models the batch names (by id or api_key), by environment. */
  modelKeys(events: readonly ValidEvent[]): { environment: string; key: string }[] {
    const keys = new Map<string, { environment: string; key: string }>();
    const add = (environment: string, key: string) =>
      keys.set(`${environment}\u0000${key}`, { environment, key });
    for (const event of events) {
      const environment = this.environmentOf(event);
      if (event.kind === 'item') {
        const modelId = event.item.relationships?.item_type.data.id;
        if (modelId) add(environment, modelId);
        const blockModels = new Set<string>();
        collectBlockModelIds(event.item.attributes, blockModels);
        for (const id of blockModels) add(environment, id);
      } else if (event.kind === 'item_type') {
        add(environment, event.itemType.id);
        if (event.itemType.attributes) add(environment, event.itemType.attributes.api_key);
      }
    }
    return [...keys.values()];
  }

  /** The records of the item events that do not name their model. */
  private recordsWithoutModel(
    events: readonly ValidEvent[],
  ): { environment: string; id: string }[] {
    return events.flatMap((event) =>
      event.kind === 'item' && !event.item.relationships
        ? [{ environment: this.environmentOf(event), id: event.item.id }]
        : [],
    );
  }

  /**
   * Loads the environments and every model the batch names (by id or api_key), and the models
   * of the records whose events do not name one (a second query, in parallel, only for such
   * batches); returns what it read, whose knownEventIds are the ids among eventIds already
   * stored.
   */
  async load(
    db: Queryable,
    events: readonly ValidEvent[],
    eventIds: readonly string[],
  ): Promise<BatchContext> {
    const records = this.recordsWithoutModel(events);
    const [context, recordModels] = await Promise.all([
      loadBatchContext(db, eventIds, this.modelKeys(events)),
      loadRecordModels(db, records),
    ]);
    this.use(context.environments, context.models);
    if (records.length > 0) {
      this.recordModels = new Map();
      for (const { environment, id } of records) {
        const model = recordModels.get(recordKey(environment, id));
        if (model) this.recordModelsOf(environment).set(id, model);
      }
    }
    return context;
  }

  private recordModelsOf(environment: string): Map<string, RecordModel> {
    const all = (this.recordModels ??= new Map<string, Map<string, RecordModel>>());
    let byId = all.get(environment);
    if (!byId) {
      byId = new Map<string, RecordModel>();
      all.set(environment, byId);
    }
    return byId;
  }

  /** Plans against these environments and models (copies are kept). */
  use(
    environments: readonly Environment[],
    models: ReadonlyMap<string, ReadonlyMap<string, ModelInfo>>,
  ): void {
    for (const env of environments) {
      this.environments.set(env.id, { locales: env.locales, isPrimary: env.isPrimary });
    }
    for (const [environment, byId] of models) this.models.set(environment, new Map(byId));
  }

  plan(event: ValidEvent, id: string): { row: NewEvent; plan: Plan } {
    const environment = this.environmentOf(event);
    const prefix = `data.${event.index}.attributes`;
    let plan: Plan = { kind: 'none' };
    let itemTypeId: string | null = null;
    let itemTypeApiKey: string | null = null;

    if (event.kind === 'environment') {
      plan = this.planEnvironment(event, prefix);
    } else if (!this.environments.has(environment)) {
      this.errors.push(
        ApiError.field(`${prefix}.environment`, 'VALIDATION_INCLUSION', 'unknown environment'),
      );
    } else if (event.kind === 'item_type') {
      plan = this.planModel(event, environment, prefix);
      itemTypeId = event.itemType.id;
      itemTypeApiKey =
        event.itemType.attributes?.api_key ??
        this.modelsOf(environment).get(event.itemType.id)?.apiKey ??
        null;
    } else if (event.kind === 'item') {
      // An event that names its model is taken at its word, even if the stored record says
      // otherwise: it is what the webhooks' payload carries. One that does not (a delete) gets
      // the record's model, so that item_type filters hold for it (API.md §4.3).
      const named = event.item.relationships?.item_type.data.id;
      const known = named ? undefined : this.recordModels?.get(environment)?.get(event.item.id);
      itemTypeId = named ?? known?.itemTypeId ?? null;
      itemTypeApiKey = itemTypeId
        ? (this.modelsOf(environment).get(itemTypeId)?.apiKey ?? known?.itemTypeApiKey ?? null)
        : null;
      plan = this.planItem(event, environment, id, prefix);
      if (this.recordModels) this.followRecord(environment, plan);
    }

    const state = this.environments.get(environment);
    const row: NewEvent = {
      id,
      environment,
      isEnvironmentPrimary: state?.isPrimary ?? false,
      entityType: event.attributes.entity_type,
      eventType: event.attributes.event_type,
      entityId: event.attributes.entity.id,
      itemTypeId,
      itemTypeApiKey,
      occurredAt: date(event.attributes.occurred_at) ?? this.now,
      entity: event.attributes.entity,
      entityJson: event.entityJson,
      previousEntity: event.attributes.previous_entity ?? null,
      relatedEntities: event.attributes.related_entities,
    };
    return { row, plan };
  }

  /** Keeps recordModels as an item event leaves its record. */
  private followRecord(environment: string, plan: Plan): void {
    if (plan.kind === 'item-write') {
      const { id, itemTypeId } = plan.write;
      const itemTypeApiKey = this.modelsOf(environment).get(itemTypeId)?.apiKey ?? null;
      this.recordModelsOf(environment).set(id, { itemTypeId, itemTypeApiKey });
    } else if (plan.kind === 'item-delete') {
      this.recordModelsOf(environment).delete(plan.delete.id);
    }
  }

  private planEnvironment(event: ValidEvent & { kind: 'environment' }, prefix: string): Plan {
    const id = event.environmentEntity.id;
    const existing = this.environments.get(id);
    const eventType = event.attributes.event_type as 'create' | 'update' | 'promote' | 'delete';
    switch (eventType) {
      case 'create':
      case 'update': {
        const locales = event.environmentEntity.attributes?.locales;
        this.environments.set(id, {
          locales: locales ?? existing?.locales ?? ['en'],
          isPrimary: existing?.isPrimary ?? false,
        });
        return { kind: 'environment-upsert', id, locales };
      }
      case 'promote':
        if (!existing) {
          this.errors.push(
            ApiError.field(`${prefix}.entity.id`, 'VALIDATION_INCLUSION', 'unknown environment'),
          );
          return { kind: 'none' };
        }
        for (const state of this.environments.values()) state.isPrimary = false;
        existing.isPrimary = true;
        return { kind: 'environment-promote', id };
      case 'delete':
        if (existing?.isPrimary) {
          this.errors.push(
            ApiError.field(
              `${prefix}.entity.id`,
              'VALIDATION_INCLUSION',
              'the primary environment cannot be deleted; promote another one first',
            ),
          );
          return { kind: 'none' };
        }
        this.environments.delete(id);
        this.models.delete(id);
        this.recordModels?.delete(id);
        return { kind: 'environment-delete', id };
    }
  }

  private planModel(
    event: ValidEvent & { kind: 'item_type' },
    environment: string,
    prefix: string,
  ): Plan {
    const models = this.modelsOf(environment);
    const { id, attributes } = event.itemType;
    if (event.attributes.event_type === 'delete') {
      models.delete(id);
      // Its records go with it.
      const records = this.recordModels?.get(environment);
      for (const [recordId, model] of records ?? []) {
        if (model.itemTypeId === id) records?.delete(recordId);
      }
      return { kind: 'model-delete', environment, id };
    }
    if (!attributes) return { kind: 'none' };
    const clash = [...models.values()].find((m) => m.apiKey === attributes.api_key && m.id !== id);
    if (clash) {
      this.errors.push(
        ApiError.field(
          `${prefix}.entity.attributes.api_key`,
          'VALIDATION_UNIQUENESS',
          `another model (${clash.id}) already has the api_key ${attributes.api_key}`,
        ),
      );
      return { kind: 'none' };
    }
    const fields: FieldWrite[] = event.fields.map((field) => {
      const { api_key, field_type, localized, label, position, ...rest } = field.attributes;
      return {
        apiKey: api_key,
        fieldType: field_type,
        localized,
        id: field.id ?? null,
        label: label ?? null,
        position,
        attributes: rest,
      };
    });
    const model: ModelWrite = {
      id,
      apiKey: attributes.api_key,
      name: attributes.name,
      modularBlock: attributes.modular_block,
      sortable: attributes.sortable,
      tree: attributes.tree,
      draftModeActive: attributes.draft_mode_active,
      attributes,
    };
    models.set(id, {
      ...model,
      fields: fields.map(({ apiKey, fieldType, localized }) => ({ apiKey, fieldType, localized })),
    });
    return { kind: 'model-upsert', environment, model, fields };
  }

  private planItem(
    event: ValidEvent & { kind: 'item' },
    environment: string,
    eventId: string,
    prefix: string,
  ): Plan {
    const { item } = event;
    const meta = item.meta ?? {};
    const updatedAt = date(meta.updated_at) ?? date(event.attributes.occurred_at) ?? this.now;
    const currentVersion =
      meta.current_version === null || meta.current_version === undefined
        ? null
        : String(meta.current_version);
    if (event.attributes.event_type === 'delete') {
      return {
        kind: 'item-delete',
        delete: { environment, id: item.id, updatedAt, currentVersion },
      };
    }
    const modelId = item.relationships?.item_type.data.id;
    const models = this.modelsOf(environment);
    const model = modelId ? models.get(modelId) : undefined;
    const modelPath = `${prefix}.entity.relationships.item_type.data.id`;
    if (!modelId || !model) {
      this.errors.push(ApiError.field(modelPath, 'VALIDATION_INCLUSION', 'unknown model'));
      return { kind: 'none' };
    }
    if (model.modularBlock) {
      this.errors.push(
        ApiError.field(
          modelPath,
          'VALIDATION_INCLUSION',
          'is a block model: blocks travel inside their record',
        ),
      );
      return { kind: 'none' };
    }
    const extracted = extractItem(model, item.attributes, item.id, `${prefix}.entity.attributes`, {
      models,
      locales: this.environments.get(environment)?.locales ?? [],
      errors: this.errors,
    });
    const eventType = event.attributes.event_type;
    const mode =
      eventType === 'publish'
        ? 'publish'
        : eventType === 'unpublish'
          ? 'unpublish'
          : model.draftModeActive
            ? 'save'
            : 'publish';
    const creator = item.relationships?.creator?.data ?? null;
    const position = item.attributes['position'] ?? meta.position;
    const parentId = item.attributes['parent_id'];
    return {
      kind: 'item-write',
      extracted,
      write: {
        environment,
        id: item.id,
        itemTypeId: model.id,
        mode,
        eventId,
        eventType,
        attributes: extracted.attributes,
        parentId: model.tree && typeof parentId === 'string' ? parentId : null,
        position: Number.isInteger(position) ? (position as number) : null,
        creator,
        createdAt: date(meta.created_at) ?? updatedAt,
        updatedAt,
        publishedAt: date(meta.published_at) ?? this.now,
        firstPublishedAt: date(meta.first_published_at),
        publicationScheduledAt: date(meta.publication_scheduled_at),
        unpublishingScheduledAt: date(meta.unpublishing_scheduled_at),
        isValid: meta.is_valid ?? true,
        isCurrentVersionValid: meta.is_current_version_valid ?? meta.is_valid ?? true,
        isPublishedVersionValid: meta.is_published_version_valid ?? meta.is_valid ?? true,
        currentVersion,
        stage: meta.stage ?? null,
      },
    };
  }
}

/** Applies the plans in order; consecutive item events go to the store in bulk. */
async function applyPlans(db: Queryable, plans: readonly Plan[], planner: Planner): Promise<void> {
  let run: ItemPlan[] = [];
  const flush = async () => {
    if (run.length > 0) await applyItemRun(db, run, planner);
    run = [];
  };
  for (const plan of plans) {
    switch (plan.kind) {
      case 'item-write':
      case 'item-delete':
        run.push(plan);
        continue;
      case 'none':
        continue;
      case 'model-upsert':
        await flush();
        await upsertModel(db, plan.environment, plan.model, plan.fields);
        continue;
      case 'model-delete':
        await flush();
        await deleteModel(db, plan.environment, plan.id);
        continue;
      case 'environment-upsert':
        await flush();
        await upsertEnvironment(db, plan.id, plan.locales);
        continue;
      case 'environment-promote':
        await flush();
        await promoteEnvironment(db, plan.id);
        continue;
      case 'environment-delete':
        await flush();
        await deleteEnvironment(db, plan.id);
        continue;
    }
  }
  await flush();
}

/**
 * Item events in bulk. A record touched several times is written in successive rounds (one
 * write per record per statement), which keeps the events' order for that record.
 */
async function applyItemRun(db: Queryable, run: ItemPlan[], planner: Planner): Promise<void> {
  const rounds: ItemPlan[][] = [];
  const seen = new Map<string, number>();
  for (const plan of run) {
    const target = plan.kind === 'item-write' ? plan.write : plan.delete;
    const key = recordKey(target.environment, target.id);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(plan);
  }
  for (const round of rounds) {
    const deletes = round.flatMap((p) => (p.kind === 'item-delete' ? [p.delete] : []));
    const writes = round.flatMap((p) => (p.kind === 'item-write' ? [p] : []));
    await deleteRecords(db, deletes);
    const written = await upsertRecords(
      db,
      writes.map((p) => p.write),
    );
    const applied = writes.filter((p) => written.has(recordKey(p.write.environment, p.write.id)));
    if (applied.length > 0) await writeBlocksAndTexts(db, applied, written, planner);
  }
}

async function writeBlocksAndTexts(
  db: Queryable,
  applied: readonly (ItemPlan & { kind: 'item-write' })[],
  written: ReadonlyMap<string, { inserted: boolean }>,
  planner: Planner,
): Promise<void> {
  const isNew = (w: RecordWrite) => written.get(recordKey(w.environment, w.id))?.inserted ?? false;
  const blocks: BlockWrite[] = applied.flatMap(({ write, extracted }) =>
    extracted.blocks.map((b) => ({
      environment: write.environment,
      id: b.id,
      itemTypeId: b.itemTypeId,
      rootId: write.id,
      blockParentId: b.parentId,
      attributes: b.attributes,
      updatedAt: write.updatedAt,
      eventId: write.eventId,
    })),
  );
  await upsertBlocks(db, blocks);
  // A new record without blocks has no blocks to reconcile.
  const syncs: BlockSync[] = applied
    .filter(({ write, extracted }) => !isNew(write) || extracted.referencedIds.length > 0)
    .map(({ write, extracted }) => ({
      environment: write.environment,
      rootId: write.id,
      mode: write.mode,
      referencedIds: extracted.referencedIds,
    }));
  await syncBlocks(db, syncs);

  // The text of blocks given by id only comes from the store.
  const storedBlocks = new Map<string, Map<string, TextBlock>>();
  const needStored = applied.filter((p) => p.extracted.idOnlyRefs.length > 0);
  for (const environment of new Set(needStored.map((p) => p.write.environment))) {
    const loaded = await loadBlocks(
      db,
      environment,
      needStored.filter((p) => p.write.environment === environment).map((p) => p.write.id),
    );
    const models = planner.modelsOf(environment);
    const missing = [...new Set([...loaded.values()].map((b) => b.itemTypeId))].filter(
      (id) => !models.has(id),
    );
    for (const model of (await loadModels(db, environment, missing)).values()) {
      models.set(model.id, model);
    }
    storedBlocks.set(
      environment,
      new Map(
        [...loaded.values()].map((b) => [
          b.id,
          { itemTypeId: b.itemTypeId, attributes: b.currentAttributes ?? {} },
        ]),
      ),
    );
  }

  const clear: { environment: string; recordId: string; versions: ItemVersion[] }[] = [];
  const texts: RecordText[] = [];
  for (const { write, extracted } of applied) {
    const versions: ItemVersion[] = write.mode === 'save' ? ['current'] : ['current', 'published'];
    if (!isNew(write)) clear.push({ environment: write.environment, recordId: write.id, versions });
    const blockMap = new Map(storedBlocks.get(write.environment));
    for (const b of extracted.blocks) blockMap.set(b.id, b);
    const rows = searchRows(write, {
      locales: planner.environments.get(write.environment)?.locales ?? [],
      models: planner.modelsOf(write.environment),
      blocks: blockMap,
    });
    // replaceRecordTexts has cleared these versions: an empty document needs no row.
    for (const row of rows) if (row.text) texts.push(row);
  }
  await replaceRecordTexts(db, clear, texts);
}
