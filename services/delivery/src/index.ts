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
export {
  renderDeliveryRequest,
  type DeliveryRequest,
  type DeliveryRequestInput,
  type RenderedWebhook,
} from './delivery/request.js';
