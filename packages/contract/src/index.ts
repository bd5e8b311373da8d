export {
  ApiError,
  ERROR_STATUS,
  errorId,
  renderErrorEnvelope,
  type ErrorCode,
  type ErrorDetails,
  type ErrorEntry,
  type ErrorEnvelope,
  type FieldErrorDetails,
  type ValidationCode,
} from './errors.js';
export { QUEUE_EVENT_MATCH, QUEUE_WEBHOOK_DELIVER, CHANNEL_WEBHOOKS_CHANGED } from './queues.js';
export { ROLES, isRole, type Role } from './roles.js';
export {
  checkAddress,
  isIpAddress,
  parseCidrList,
  type AddressCheck,
  type BlockedRangeKind,
  type CidrList,
} from './ip-ranges.js';
export {
  ENVIRONMENT_TYPES,
  PAYLOAD_API_VERSIONS,
  SIGNING_SECRET_ROTATION_GRACE_MS,
  UNFILTERED_ENTITY_TYPES,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
  entryFilters,
  isWebhookEntityType,
  isWebhookEventType,
  webhooksChangedChannel,
  type WebhookChangedMessage,
  type WebhookEntityType,
  type WebhookEventEntry,
  type WebhookFilter,
  type WebhookFilterEntityType,
} from './webhooks.js';
