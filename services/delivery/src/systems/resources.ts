import type { WebhookChangedMessage } from '@herald/contract';
import type { Coordination, DeliverQueue, EventMatchQueue, Logger } from '@herald/runtime';
import type { Db } from '@herald/store';
import type { DeliveryMetrics } from '../metrics.js';
import type { DeliveryLoaders, ModelCache } from '../shared/loaders.js';
import type { WebhookIndex } from './match/webhook-index.js';
import type { Lease } from './recovery/lease.js';

/**
 * What a delivery process opens once and its systems share (after trigger.dev's run engine). A
 * system takes the part it uses, named in its constructor's type (`Pick<SystemResources, …>`), so
 * its type says what it may touch.
 */
export interface SystemResources {
  db: Db;
  /** Redis, or Postgres alone: the queues' store, in-flight slots, rate limits, the channel. */
  coordination: Coordination;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** The producer side of event-match (the sweeper and notices enqueue on it). */
  matchQueue: EventMatchQueue;
  /** The producer side of webhook-deliver: retries, calls that wait, the sweeper's re-adds. */
  deliverQueue: DeliverQueue;
  /** This process's lease on the calls whose first attempts it holds. */
  lease: Lease;
  /** Batched reads of calls, webhooks and events (one query serves many jobs under load). */
  loaders: DeliveryLoaders;
  /** Models for rendering and for matching on content. */
  models: ModelCache;
  /** The enabled webhooks, as far as this process heard (WebhookIndexSync keeps it). */
  index: WebhookIndex;
  /**
   * Resolves once `index` holds every webhook change of a webhooks generation (the one a match's
   * events were read with: findEventsToMatch).
   */
  indexUpTo: (generation: bigint) => Promise<void>;
  /** Tells every process of a webhook change (the channel the API publishes on). */
  announce: (message: WebhookChangedMessage) => Promise<void>;
  /** True once the process is shutting down: writes stop waiting for a database that is away. */
  closing: () => boolean;
}
