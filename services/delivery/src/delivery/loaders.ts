import type { ModelInfo } from '@herald/contract';
import {
  findEvents,
  findWebhookCalls,
  findWebhooks,
  loadModels,
  recordWebhookCallAttempts,
  type Db,
  type WebhookCallAttempt,
  type StoredEvent,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';
import { BatchLoader, BatchWriter } from './batch-loader.js';
import type { ModelSource } from './payload.js';

/** The workers' reads by id and attempt writes, batched (see BatchLoader, BatchWriter). */
export interface DeliveryLoaders {
  calls: BatchLoader<WebhookCallRecord>;
  webhooks: BatchLoader<WebhookRecord>;
  events: BatchLoader<StoredEvent>;
  /** Models for serializing entities: the deliveries rendered at once share the queries. */
  models: ModelSource;
  /** Attempts' outcomes, written several per statement. */
  attempts: BatchWriter<WebhookCallAttempt>;
}

const modelKey = (environment: string, id: string) => `${environment}\u0000${id}`;

export function deliveryLoaders(db: Db): DeliveryLoaders {
  const models = new BatchLoader<{ key: string; model: ModelInfo }>(
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
    models: async (environment, ids) => {
      const entries = await Promise.all(ids.map((id) => models.load(modelKey(environment, id))));
      return new Map(entries.flatMap((entry) => (entry ? [[entry.model.id, entry.model]] : [])));
    },
    attempts: new BatchWriter((items) =>
      recordWebhookCallAttempts(
        db,
        items.map(({ id, value }) => ({ id, attempt: value })),
      ),
    ),
  };
}
