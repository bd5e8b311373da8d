import {
  findEvents,
  findWebhookCalls,
  findWebhooks,
  recordWebhookCallAttempts,
  type Db,
  type WebhookCallAttempt,
  type StoredEvent,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';
import { BatchLoader, BatchWriter } from './batch-loader.js';

/** The workers' reads by id and attempt writes, batched (see BatchLoader, BatchWriter). */
export interface DeliveryLoaders {
  calls: BatchLoader<WebhookCallRecord>;
  webhooks: BatchLoader<WebhookRecord>;
  events: BatchLoader<StoredEvent>;
  /** Attempts' outcomes, written several per statement. */
  attempts: BatchWriter<WebhookCallAttempt>;
}

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
    attempts: new BatchWriter((items) =>
      recordWebhookCallAttempts(
        db,
        items.map(({ id, value }) => ({ id, attempt: value })),
      ),
    ),
  };
}
