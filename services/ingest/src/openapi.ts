import { itemOperations } from '@herald/contract';
import { HERALD_VERSION } from '@herald/payload';
import {
  buildOpenApiDocument,
  healthOperations,
  type ApiOperation,
  type OpenApiDocument,
} from '@herald/runtime';
import { createAccessTokenOperation } from './routes/access-tokens.create.js';
import { destroyAccessTokenOperation } from './routes/access-tokens.destroy.js';
import { listAccessTokensOperation } from './routes/access-tokens.list.js';
import { regenerateAccessTokenOperation } from './routes/access-tokens.regenerate.js';
import { retrieveAccessTokenOperation } from './routes/access-tokens.retrieve.js';
import { updateAccessTokenOperation } from './routes/access-tokens.update.js';
import { createBulkJobOperation } from './routes/bulk-jobs.create.js';
import { listBulkJobsOperation } from './routes/bulk-jobs.list.js';
import { cancelBulkJobOperation, retrieveBulkJobOperation } from './routes/bulk-jobs.retrieve.js';
import { consoleOperation, rootOperation } from './routes/console.static.js';
import { createEventsOperation } from './routes/events.create.js';
import { listEventsOperation } from './routes/events.list.js';
import { retrieveEventOperation } from './routes/events.retrieve.js';
import { openApiOperation } from './routes/openapi.retrieve.js';
import { listRolesOperation } from './routes/roles.list.js';
import { retrieveRoleOperation } from './routes/roles.retrieve.js';
import { listWebhookCallAttemptsOperation } from './routes/webhook-calls.attempts.js';
import { listWebhookCallsOperation } from './routes/webhook-calls.list.js';
import { resendWebhookCallOperation } from './routes/webhook-calls.resend.js';
import { retrieveWebhookCallOperation } from './routes/webhook-calls.retrieve.js';
import { createWebhookOperation } from './routes/webhooks.create.js';
import { destroyWebhookOperation } from './routes/webhooks.destroy.js';
import { listWebhooksOperation } from './routes/webhooks.list.js';
import { previewWebhookOperation } from './routes/webhooks.preview.js';
import { retrieveWebhookOperation } from './routes/webhooks.retrieve.js';
import { rotateWebhookSecretOperation } from './routes/webhooks.rotate-secret.js';
import { sendWebhookTestOperation } from './routes/webhooks.send-test.js';
import { listWebhookStatsOperation, webhookStatsOperation } from './routes/webhooks.stats.js';
import { updateWebhookOperation } from './routes/webhooks.update.js';

/** ingest's operations, in the order of docs/api.md. */
const ingestOperations: readonly ApiOperation[] = [
  createWebhookOperation,
  listWebhooksOperation,
  retrieveWebhookOperation,
  updateWebhookOperation,
  destroyWebhookOperation,
  rotateWebhookSecretOperation,
  sendWebhookTestOperation,
  webhookStatsOperation,
  listWebhookStatsOperation,
  previewWebhookOperation,
  listWebhookCallsOperation,
  retrieveWebhookCallOperation,
  resendWebhookCallOperation,
  listWebhookCallAttemptsOperation,
  createBulkJobOperation,
  listBulkJobsOperation,
  retrieveBulkJobOperation,
  cancelBulkJobOperation,
  createEventsOperation,
  listEventsOperation,
  retrieveEventOperation,
  createAccessTokenOperation,
  listAccessTokensOperation,
  retrieveAccessTokenOperation,
  updateAccessTokenOperation,
  destroyAccessTokenOperation,
  regenerateAccessTokenOperation,
  listRolesOperation,
  retrieveRoleOperation,
  openApiOperation,
  rootOperation,
  consoleOperation,
];

let built: OpenApiDocument | undefined;

/**
 * The OpenAPI 3.1 document of the whole HTTP API (GET /openapi.json), in the order of
 * docs/api.md: read's operations (the contract's itemOperations: no service imports another),
 * ingest's, then every process's own. Served by ingest, alone (the gateway sends it everything but
 * /items) or in the single process. Built once.
 */
export function apiDocument(): OpenApiDocument {
  built ??= buildOpenApiDocument([...itemOperations, ...ingestOperations, ...healthOperations], {
    title: 'Herald',
    version: HERALD_VERSION,
    description:
      'Self-hosted webhook delivery, wire-compatible with the DatoCMS CMA for records, webhooks ' +
      'and the webhook call log. Errors: the DatoCMS envelope, every code in docs/errors.md.',
  });
  return built;
}
