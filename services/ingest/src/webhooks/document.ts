import { ApiError } from '@herald/contract';

/**
 * Reads a JSON:API request document `{"data":{"type":"webhook","attributes":{...}}}`. A body that
 * is JSON but not that shape is INVALID_FORMAT (docs/api.md, Documents); attributes are validated
 * elsewhere.
 */
export function readWebhookDocument(
  body: unknown,
  options: { id?: string },
): Record<string, unknown> {
  const fail = (message: string, field?: string): never => {
    throw new ApiError('INVALID_FORMAT', { message, ...(field ? { field } : {}) });
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail(
      'The body must be a JSON object {"data": {"type": "webhook", "attributes": {...}}}',
    );
  }
  const data = (body as Record<string, unknown>)['data'];
  if (data === undefined) return fail('The body has no "data" member', 'data');
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return fail('"data" must be one resource object', 'data');
  }
  const resource = data as Record<string, unknown>;
  for (const key of Object.keys(resource)) {
    if (!['type', 'id', 'attributes', 'relationships', 'meta'].includes(key)) {
      fail(`"data" has an unknown member "${key}"`, `data.${key}`);
    }
  }
  if (resource['type'] !== 'webhook') {
    fail(
      `data.type must be "webhook", not ${JSON.stringify(resource['type'] ?? null)}`,
      'data.type',
    );
  }
  if (options.id === undefined) {
    if (resource['id'] !== undefined)
      fail('Webhook ids are generated; do not send data.id', 'data.id');
  } else if (resource['id'] !== undefined && resource['id'] !== options.id) {
    fail(`data.id must be the id in the URL ("${options.id}")`, 'data.id');
  }
  const relationships = resource['relationships'];
  if (
    relationships !== undefined &&
    (typeof relationships !== 'object' ||
      relationships === null ||
      Array.isArray(relationships) ||
      Object.keys(relationships).length > 0)
  ) {
    fail('A webhook has no relationships', 'data.relationships');
  }
  const attributes = resource['attributes'];
  // The official client omits `attributes` when it would be empty.
  if (attributes === undefined) return {};
  if (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes)) {
    return fail('data.attributes must be an object', 'data.attributes');
  }
  return attributes as Record<string, unknown>;
}
