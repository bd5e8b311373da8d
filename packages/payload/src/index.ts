export { HERALD_USER_AGENT, HERALD_VERSION, payloadEnv } from './identity.js';
export type { ModelSource } from './payload.js';
export {
  renderDeliveryRequest,
  type DeliveryRequest,
  type DeliveryRequestInput,
  type RenderedWebhook,
} from './request.js';
export { signWebhook } from './signing.js';
