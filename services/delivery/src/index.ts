export { createApp, type DeliveryDeps } from './app.js';
export { deliveryEnv, DeliveryConfig, loadConfig } from './config.js';
export {
  startEventSweeper,
  sweepUnmatchedEvents,
  type EventSweeperOptions,
} from './sweep-events.js';
