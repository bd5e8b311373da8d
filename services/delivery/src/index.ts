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
