import { ingestOperations } from '@herald/ingest';
import { HERALD_VERSION } from '@herald/payload';
import { readOperations } from '@herald/read';
import { buildOpenApiDocument, healthOperations, type OpenApiDocument } from '@herald/runtime';

let built: OpenApiDocument | undefined;

/**
 * The OpenAPI 3.1 document of the whole HTTP API (GET /openapi.json), in the order of
 * docs/api.md: read's operations, ingest's, then the processes' own. Built once.
 */
export function apiDocument(): OpenApiDocument {
  built ??= buildOpenApiDocument([...readOperations, ...ingestOperations, ...healthOperations], {
    title: 'Herald',
    version: HERALD_VERSION,
    description:
      'Self-hosted webhook delivery, wire-compatible with the DatoCMS CMA for records, webhooks ' +
      'and the webhook call log. Errors: the DatoCMS envelope, every code in docs/errors.md.',
  });
  return built;
}
