export { createApp, type DeliveryDeps } from './app.js';
export { deliveryEnv, DeliveryConfig, loadConfig } from './config.js';
