import { ApiError, type ErrorEntry, type ModelInfo } from '@herald/contract';
import {
  recordKey,
  type Environment,
  type FieldWrite,
  type ModelWrite,
  type NewEvent,
  type RecordDelete,
  type RecordModel,
  type RecordWrite,
} from '@herald/store';
import { extractItem, type ExtractedItem } from './item-values.js';
import type { ValidEvent } from './validate-events.js';

/** An environment as the batch leaves it. */
interface EnvironmentState {
  locales: string[];
  isPrimary: boolean;
}

/** What one event does to the record store. */
export type Effect =
  | { kind: 'item-write'; write: RecordWrite; extracted: ExtractedItem }
  | { kind: 'item-delete'; delete: RecordDelete; eventId: string }
  | { kind: 'model-upsert'; environment: string; model: ModelWrite; fields: FieldWrite[] }
  | { kind: 'model-delete'; environment: string; id: string }
  | { kind: 'environment-upsert'; id: string; locales: string[] | undefined }
  | { kind: 'environment-promote'; id: string }
  | { kind: 'environment-delete'; id: string }
  | { kind: 'none' };

interface PlannedEvent {
  /** The event as stored. */
  row: NewEvent;
  effect: Effect;
}

export interface PlanInput {
  events: readonly ValidEvent[];
  /** Each event's id (its own, or one made up for it), in the events' order. */
  ids: readonly string[];
  /** The ids already stored: their events are duplicates. */
  storedIds: ReadonlySet<string>;
  /** The environment of the events that name none. */
  requestEnvironment: string;
  /** The acceptance time, for the dates an event leaves out. */
  now: Date;
  /** The traceparent of the request's span, stored with each event (null: not traced). */
  traceparent?: string | null;
  environments: readonly Environment[];
  /** By environment, by id: at least the models of modelKeys(events) that exist. */
  models: ReadonlyMap<string, ReadonlyMap<string, ModelInfo>>;
  /**
   * The stored models of recordsWithoutModel(events), by recordKey; left out when there are no
   * such records.
   */
  recordModels?: ReadonlyMap<string, RecordModel> | undefined;
}

export interface BatchPlan {
  /** The events to store, in request order: each id's first occurrence unless already stored. */
  events: PlannedEvent[];
  /** Every problem found; the batch is refused if there is one. */
  errors: ErrorEntry[];
  /** The environments as the batch leaves them. */
  environments: ReadonlyMap<string, EnvironmentState>;
  /** The models (those given, and the batch's) as the batch leaves them, by environment, by id. */
  models: ReadonlyMap<string, ReadonlyMap<string, ModelInfo>>;
}

/**
 * Plans a batch: walks its new events in order against a simulated state of environments and
 * models (so that an item event may use a model created earlier in the same batch), producing
 * each event's row and what it does to the store, and collecting every validation problem. A
 * pure function: it reads nothing but its input and changes none of it.
 */
export function planBatch(input: PlanInput): BatchPlan {
  const planner = new Planner(input);
  const events: PlannedEvent[] = [];
  const seen = new Set<string>();
  input.events.forEach((event, i) => {
    const id = input.ids[i]!;
    // A repeated id is a duplicate: only its first occurrence may be stored and applied.
    if (seen.has(id)) return;
    seen.add(id);
    if (!input.storedIds.has(id)) events.push(planner.plan(event, id));
  });
  return {
    events,
    errors: planner.errors,
    environments: planner.environments,
    models: planner.models,
  };
}

export function environmentOf(event: ValidEvent, requestEnvironment: string): string {
  if (event.kind === 'environment') return event.environmentEntity.id;
  return event.attributes.environment ?? requestEnvironment;
}

/** The models the batch names (by id or api_key), by environment: what planBatch needs. */
export function modelKeys(
  events: readonly ValidEvent[],
  requestEnvironment: string,
): { environment: string; key: string }[] {
  const keys = new Map<string, { environment: string; key: string }>();
  const add = (environment: string, key: string) =>
    keys.set(`${environment}\u0000${key}`, { environment, key });
  for (const event of events) {
    const environment = environmentOf(event, requestEnvironment);
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

/** The records of the item events that do not name their model: planBatch needs their models. */
export function recordsWithoutModel(
  events: readonly ValidEvent[],
  requestEnvironment: string,
): { environment: string; id: string }[] {
  return events.flatMap((event) =>
    event.kind === 'item' && !event.item.relationships
      ? [{ environment: environmentOf(event, requestEnvironment), id: event.item.id }]
      : [],
  );
}

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

/** planBatch's walk: the simulated state, changed event by event. */
class Planner {
  readonly errors: ErrorEntry[] = [];
  readonly environments = new Map<string, EnvironmentState>();
  /** Models by environment, by id. */
  readonly models = new Map<string, Map<string, ModelInfo>>();
  /**
   * Records' models by environment, by record id, for the item events that name only their
   * record (deletes may): as stored when the batch was read, then as the batch writes and
   * deletes records and models. Undefined (and not kept) when no event of the batch needs it.
   */
  private recordModels: Map<string, Map<string, RecordModel>> | undefined;
  private readonly now: Date;
  private readonly requestEnvironment: string;
  private readonly traceparent: string | null;

  constructor(input: PlanInput) {
    this.now = input.now;
    this.traceparent = input.traceparent ?? null;
    this.requestEnvironment = input.requestEnvironment;
    for (const env of input.environments) {
      this.environments.set(env.id, { locales: env.locales, isPrimary: env.isPrimary });
    }
    for (const [environment, byId] of input.models) this.models.set(environment, new Map(byId));
    if (input.recordModels) {
      this.recordModels = new Map();
      for (const { environment, id } of recordsWithoutModel(
        input.events,
        this.requestEnvironment,
      )) {
        const model = input.recordModels.get(recordKey(environment, id));
        if (model) this.recordModelsOf(environment).set(id, model);
      }
    }
  }

  private modelsOf(environment: string): Map<string, ModelInfo> {
    let models = this.models.get(environment);
    if (!models) {
      models = new Map();
      this.models.set(environment, models);
    }
    return models;
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

  plan(event: ValidEvent, id: string): PlannedEvent {
    const environment = environmentOf(event, this.requestEnvironment);
    const prefix = `data.${event.index}.attributes`;
    let effect: Effect = { kind: 'none' };
    let itemTypeId: string | null = null;
    let itemTypeApiKey: string | null = null;

    if (event.kind === 'environment') {
      effect = this.planEnvironment(event, prefix);
    } else if (!this.environments.has(environment)) {
      this.errors.push(
        ApiError.field(`${prefix}.environment`, 'VALIDATION_INCLUSION', 'unknown environment'),
      );
    } else if (event.kind === 'item_type') {
      effect = this.planModel(event, environment, prefix);
      itemTypeId = event.itemType.id;
      itemTypeApiKey =
        event.itemType.attributes?.api_key ??
        this.modelsOf(environment).get(event.itemType.id)?.apiKey ??
        null;
    } else if (event.kind === 'item') {
      // An event that names its model is taken at its word, even if the stored record says
      // otherwise: it is what the webhooks' payload carries. One that does not (a delete) gets the
      // record's model, so that item_type filters hold for it (docs/api.md, Events and filters).
      const named = event.item.relationships?.item_type.data.id;
      const known = named ? undefined : this.recordModels?.get(environment)?.get(event.item.id);
      itemTypeId = named ?? known?.itemTypeId ?? null;
      itemTypeApiKey = itemTypeId
        ? (this.modelsOf(environment).get(itemTypeId)?.apiKey ?? known?.itemTypeApiKey ?? null)
        : null;
      effect = this.planItem(event, environment, id, prefix);
      if (this.recordModels) this.followRecord(environment, effect);
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
    if (this.traceparent) row.traceparent = this.traceparent;
    return { row, effect };
  }

  /** Keeps recordModels as an item event leaves its record. */
  private followRecord(environment: string, effect: Effect): void {
    if (effect.kind === 'item-write') {
      const { id, itemTypeId } = effect.write;
      const itemTypeApiKey = this.modelsOf(environment).get(itemTypeId)?.apiKey ?? null;
      this.recordModelsOf(environment).set(id, { itemTypeId, itemTypeApiKey });
    } else if (effect.kind === 'item-delete') {
      this.recordModelsOf(environment).delete(effect.delete.id);
    }
  }

  private planEnvironment(event: ValidEvent & { kind: 'environment' }, prefix: string): Effect {
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
  ): Effect {
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
  ): Effect {
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
        eventId,
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
