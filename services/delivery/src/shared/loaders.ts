import type { ModelInfo } from '@herald/contract';
import type { ModelSource } from '@herald/payload';
import {
  findEvents,
  findWebhookCalls,
  findWebhooks,
  loadModels,
  type Db,
  type VersionedModel,
  type StoredEvent,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';
import { BatchLoader } from './batch-loader.js';

/** The workers' reads by id, batched (see BatchLoader). */
export interface DeliveryLoaders {
  calls: BatchLoader<WebhookCallRecord>;
  webhooks: BatchLoader<WebhookRecord>;
  events: BatchLoader<StoredEvent>;
  /** Models for serializing entities (ModelCache). */
  models: ModelCache;
}

const modelKey = (environment: string, id: string) => `${environment}\u0000${id}`;

/**
 * Models for serializing entities, by (environment, id), each kept with the version it was read
 * at (item_types.xmin, which every change of the model or of its fields moves). An event read by
 * findEvents carries the version of its model at that moment (StoredEvent.modelVersion): when the
 * kept model has that version it is used as is, so a delivery of an unchanged model costs no
 * query. Anything else (another version, no version known, a block's model) is read from Postgres,
 * the reads of the deliveries rendered at once sharing the queries.
 */
export class ModelCache {
  readonly #models = new Map<string, VersionedModel>();
  readonly #loader: BatchLoader<{ key: string; model: VersionedModel }>;

  constructor(
    db: Db,
    /** Models kept at most (all are dropped when it is reached; they are read again on use). */
    private readonly maxModels = 10_000,
  ) {
    this.#loader = new BatchLoader<{ key: string; model: VersionedModel }>(
      async (keys) => {
        const byEnvironment = new Map<string, string[]>();
        for (const key of keys) {
          const [environment = '', id = ''] = key.split('\u0000');
          byEnvironment.set(environment, [...(byEnvironment.get(environment) ?? []), id]);
        }
        const loaded = await Promise.all(
          [...byEnvironment].map(async ([environment, ids]) =>
            [...(await loadModels(db, environment, ids)).values()].map((model) => ({
              key: modelKey(environment, model.id),
              model,
            })),
          ),
        );
        return loaded.flat();
      },
      (entry) => entry.key,
    );
  }

  /** The models source for rendering `event`: its own model comes from memory if unchanged. */
  forEvent(event: Pick<StoredEvent, 'environment' | 'itemTypeId' | 'modelVersion'>): ModelSource {
    return async (environment, ids) => {
      const models = new Map<string, ModelInfo>();
      const missing: string[] = [];
      for (const id of ids) {
        const kept = this.#models.get(modelKey(environment, id));
        const seen =
          environment === event.environment && id === event.itemTypeId
            ? event.modelVersion
            : undefined;
        if (kept && seen && kept.version === seen) models.set(id, kept);
        else missing.push(id);
      }
      const loaded = await Promise.all(
        missing.map((id) => this.#loader.load(modelKey(environment, id))),
      );
      for (const entry of loaded) {
        if (!entry) continue;
        models.set(entry.model.id, entry.model);
        if (this.#models.size >= this.maxModels) this.#models.clear();
        this.#models.set(entry.key, entry.model);
      }
      return models;
    };
  }
}

/** The workers' reads by id, batched (BatchLoader), and the models they render with. */
export function deliveryLoaders(db: Db): DeliveryLoaders {
  return {
    calls: new BatchLoader(
      (ids) => findWebhookCalls(db, ids),
      (call) => call.id,
    ),
    webhooks: new BatchLoader(
      (ids) => findWebhooks(db, ids),
      (webhook) => webhook.id,
    ),
    events: new BatchLoader(
      (ids) => findEvents(db, ids),
      (event) => event.id,
    ),
    models: new ModelCache(db),
  };
}
