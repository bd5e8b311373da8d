/**
 * The part of the contract a browser may import (`@herald/contract/tables`, bundled by the
 * console): the wire vocabulary's tables and types, from modules that import nothing but each
 * other. No zod, ipaddr.js or node: module may be reached from here (tables.test.ts checks it).
 */
export {
  BATCH_LIMITS,
  COALESCED_ENTITY_TYPES,
  CONTENT_ENTRY_KEYS,
  DELIVERY_ORDERS,
  ENVIRONMENT_TYPES,
  OAUTH2_CLIENT_AUTHS,
  RECORD_STATUSES,
  UNFILTERED_ENTITY_TYPES,
  WEBHOOK_AUTH_KINDS,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
  isWebhookEntityType,
  type DeliveryOrder,
  type DeliveryPolicy,
  type RecordStatus,
  type WebhookAuth,
  type WebhookBatch,
  type WebhookEntityType,
  type WebhookEventEntry,
  type WebhookFilter,
  type WebhookFilterEntityType,
  type WebhookTls,
} from './webhooks.js';
export {
  SAMPLE_EVENT_ID,
  ATTEMPT_TRIGGERS,
  WEBHOOK_CALL_STATUSES,
  type AttemptTrigger,
  type WebhookCallStatus,
} from './webhook-calls.js';
export {
  DESTINATION_KINDS,
  DESTINATION_SCHEMES,
  STREAM_MAX_LEN,
  type Destination,
  type DestinationKind,
} from './destinations.js';
export { ITEM_FILTER_OPERATORS, type ItemFilterOperator } from './item-filters.js';
// The resources' types (types only: erased from the bundle, so zod is never reached at run time).
export type {
  EventCallResource,
  EventResource,
  LoggedEventResource,
  WebhookCallAttemptResource,
  WebhookCallResource,
  WebhookStatsResource,
} from './resources.js';
