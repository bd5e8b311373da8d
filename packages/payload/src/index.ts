export { HERALD_USER_AGENT, HERALD_VERSION, payloadEnv } from './identity.js';
export type { ModelSource } from './payload.js';
export { callContent, mergeEvents, type CallContent } from './flow.js';
export { requestForDestination } from './destination-request.js';
export { redactHeaders } from './redact-headers.js';
export { redactUrl } from './redact-url.js';
export {
  renderDeliveryRequest,
  type BatchEntry,
  type DeliveryRequest,
  type DeliveryRequestInput,
  type RenderedWebhook,
} from './request.js';
export { signWebhook } from './signing.js';
