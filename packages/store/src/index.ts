export {
  createPgliteDb,
  createPostgresDb,
  isDbUnavailableError,
  sqlState,
  type Db,
  type NamedStatement,
  type PgliteOptions,
  type PostgresOptions,
  type QueryResult,
  type Queryable,
  type Row,
} from './db.js';
export { openDb, type OpenDbOptions } from './open.js';
export {
  MIGRATIONS_DIR,
  loadMigrations,
  migrate,
  splitStatements,
  type Migration,
} from './migrate.js';
export {
  createToken,
  findTokenByHash,
  generateToken,
  hashToken,
  listTokens,
  revokeToken,
  type ApiToken,
} from './tokens.js';
export { findEnvironment, findPrimaryEnvironment, type Environment } from './environments.js';
export {
  deleteEnvironment,
  listEnvironments,
  promoteEnvironment,
  upsertEnvironment,
} from './environments.js';
export {
  findEvent,
  findEvents,
  insertEvents,
  listUnmatchedEvents,
  markEventsMatched,
  type NewEvent,
  type StoredEvent,
} from './events.js';
export {
  deleteModel,
  findModelIdByApiKey,
  findModelsByIdOrApiKey,
  listModels,
  loadModels,
  upsertModel,
  type FieldWrite,
  type ModelWrite,
} from './models.js';
export {
  RECORD_COLUMNS,
  deleteRecords,
  findRecord,
  loadBlocks,
  recordKey,
  replaceRecordTexts,
  syncBlocks,
  toStoredItem,
  upsertBlocks,
  upsertRecords,
  versionKey,
  writeItemBatch,
  type BlockSync,
  type BlockWrite,
  type RecordDelete,
  type RecordMode,
  type RecordRow,
  type RecordText,
  type RecordWrite,
} from './records.js';
export { buildSearchTexts, textSearchConfig, type TextBlock } from './search-text.js';
export { loadBatchContext, type BatchContext } from './batch-context.js';
export {
  activeSigningSecrets,
  deleteWebhook,
  disableWebhook,
  findWebhook,
  generateSigningSecret,
  insertWebhook,
  isWebhookId,
  isWebhookNameTaken,
  listEnabledWebhooks,
  listWebhooks,
  listWebhookVersions,
  findWebhooks,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookInput,
  type WebhookRecord,
} from './webhooks.js';
export {
  WEBHOOK_CALL_STATUSES,
  createWebhookCalls,
  dropPendingRetries,
  dropWebhookCall,
  findWebhookCall,
  findWebhookCalls,
  listStrandedWebhookCalls,
  listWebhookCalls,
  markWebhookCallsEnqueued,
  recordWebhookCallAttempt,
  recordWebhookCallAttempts,
  type WebhookCallAttempt,
  type WebhookCallListQuery,
  type WebhookCallRecord,
  type WebhookCallStatus,
} from './webhook-calls.js';
