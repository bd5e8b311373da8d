export { deliveryMetrics } from './metrics.js';
export {
  DeliveryConfig,
  deliveryEnv,
  deliverySettings,
  loadConfig,
  openWorkerDb,
} from './config.js';
export {
  startDelivery,
  type DeliveryDeps,
  type DeliveryRuntime,
  type DeliverySettings,
} from './workers.js';
export {
  Sweeper,
  sweepUnmatchedEvents,
  type EventSweepOptions,
  type SweeperOptions,
} from './systems/recovery/sweeper.js';
export { WebhookIndex, type MatchableEvent } from './systems/match/webhook-index.js';
export { deliveryRole } from './role.js';
