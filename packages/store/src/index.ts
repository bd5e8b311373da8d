export {
  createPgliteDb,
  createPostgresDb,
  isDbUnavailableError,
  sqlState,
  type Db,
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
