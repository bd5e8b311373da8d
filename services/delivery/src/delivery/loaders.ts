import {
  findEvents,
  findWebhookCalls,
  findWebhooks,
  type Db,
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
  };
}
