export {
  ApiError,
  errorId,
  renderErrorEnvelope,
  type ErrorDetails,
  type ErrorEntry,
  type FieldErrorDetails,
  type ValidationCode,
} from './errors.js';
export { ERROR_CODES, ERROR_STATUS, type ErrorCode } from './error-codes.js';
export {
  AccessTokenResource,
  BulkJobResource,
  ErrorEnvelope,
  EventCallResource,
  EventResource,
  EventsAccepted,
  IncludedWebhookResource,
  ItemResource,
  LoggedEventResource,
  ReplayOffer,
  RoleResource,
  WebhookCallAttemptResource,
  WebhookCallResource,
  WebhookPreviewResource,
  WebhookResource,
  WebhookStatsResource,
  apiErrorEntry,
  totalCount,
  type BlockResource,
} from './resources.js';
export {
  DESTINATION_KINDS,
  DESTINATION_SCHEMES,
  HTTP_DESTINATION,
  STREAM_MAX_LEN,
  describeDestination,
  keepStoredCredentials,
  redactBrokerUrl,
  redactDestination,
  type BrokerDestination,
  type Destination,
  type DestinationKind,
} from './destinations.js';
export { QUEUE_EVENT_MATCH, QUEUE_WEBHOOK_DELIVER, CHANNEL_WEBHOOKS_CHANGED } from './queues.js';
export { AccessTokenName, ROLES, isRole, type Role } from './roles.js';
export type { ApiOperation } from './api-operation.js';
export { ItemsRetrieveQuery, itemOperations } from './item-operations.js';
export {
  API_KEY_PATTERN,
  LOCALE_PATTERN,
  ENTITY_BYTES_MAX,
  ENTITY_TYPES,
  EVENTS_PER_REQUEST_MAX,
  EVENT_TYPES,
  EVENT_TYPES_BY_ENTITY,
  EnvironmentEntity,
  EnvironmentId,
  Entity,
  EntityId,
  EventId,
  EventInput,
  EventMatchJobData,
  FIELD_TYPES,
  FieldEntity,
  ItemEntity,
  ItemMeta,
  ItemTypeEntity,
  MATCH_EVENT_JOB,
  MATCH_JOB_EVENTS_MAX,
  RelationshipOne,
  eventJobId,
  isEntityType,
  isEventTypeOf,
  isPosition,
  Position,
  type EntityType,
  type EventType,
  type FieldType,
} from './events.js';
export {
  BLOCK_FIELD_TYPES,
  mapBlockRefs,
  mapFieldValue,
  serializeItem,
  versionAttributes,
  type ItemVersion,
  type ModelField,
  type ModelInfo,
  type SerializeItemOptions,
  type StoredItem,
} from './items.js';
export {
  checkAddress,
  isIpAddress,
  parseCidrList,
  type AddressCheck,
  type BlockedRangeKind,
  type CidrList,
} from './ip-ranges.js';
export {
  PAYLOAD_API_VERSIONS,
  SIGNING_SECRET_ROTATION_GRACE_MS,
  entryFilters,
  isWebhookEventType,
  webhooksChangedChannel,
  type WebhookChangedMessage,
} from './webhooks.js';
export {
  FIELD_TYPE_FILTERS,
  coerceFilterOperand,
  compileMatchPattern,
  fieldConditionHolds,
  fieldTypeFilters,
  filterOperator,
  parseDateTime,
  presenceOf,
  type FilterOperand,
  type FilterSpec,
  type FilterTarget,
  type FilterValueKind,
  type MatchOperand,
  type RefuseOperand,
} from './item-filters.js';
export { regexCostProblem } from './regex-cost.js';
export {
  READ_AFTER_HEADER,
  decodeReadAfter,
  encodeReadAfter,
  parseLsn,
  readAfterOf,
} from './read-after.js';
export {
  compileContentFilter,
  contentFilterHolds,
  describeChanges,
  describeItemEvent,
  jsonEqual,
  type ChangeSet,
  type ContentFilter,
  type ItemEventContent,
  type ItemEventVersions,
} from './webhook-content.js';
export { DELIVER_WEBHOOK_JOB, DeliverJobData, deliverJobId, resendJobId } from './deliveries.js';
export { errorMessage, isObject } from './values.js';
// The browser-safe tables (webhook event types, call statuses, filter operators): a curated list
// of its own, which the console imports as @herald/contract/tables.
export * from './tables.js';
