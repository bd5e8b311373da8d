export { createApp, type DeliveryDeps as DeliveryAppDeps } from './app.js';
export {
  DeliveryConfig,
  HERALD_VERSION,
  deliveryEnv,
  deliverySettings,
  loadConfig,
} from './config.js';
export {
  startDelivery,
  type DeliveryDeps,
  type DeliveryRuntime,
  type DeliverySettings,
} from './workers.js';
export {
  startEventSweeper,
  sweepUnmatchedEvents,
  type EventSweeperOptions,
} from './sweep-events.js';
export { WebhookIndex, type MatchableEvent } from './webhook-index.js';
