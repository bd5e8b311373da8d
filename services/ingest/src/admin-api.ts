import type { RequestHandler } from 'express';
import { z } from 'zod';
import type { ApiError } from '@herald/contract';
import type { ApiOperation } from '@herald/runtime';

/** What an admin operation states itself: all but its section and who may call it. */
type AdminOperationFields = Omit<ApiOperation, 'method' | 'path' | 'tag' | 'access'>;

/**
 * The operations of one section of docs/api.md's management API (`tag`): admin only, as every
 * ingest router mounts them behind requireRole(). `common` holds what the whole section shares.
 */
function adminOperations(
  tag: string,
  common: Partial<AdminOperationFields> = {},
): (method: ApiOperation['method'], path: string, fields: AdminOperationFields) => ApiOperation {
  return (method, path, fields) => ({
    method,
    path,
    tag,
    access: { roles: [] },
    ...common,
    ...fields,
  });
}

export const webhooksOperation = adminOperations('Webhooks');
export const webhookCallsOperation = adminOperations('Webhook calls');
export const bulkJobsOperation = adminOperations('Bulk jobs', { extension: true });
export const eventsOperation = adminOperations('Events', { extension: true });
export const accessTokensOperation = adminOperations('Access tokens');

/** A success response whose body is `{ data: resource }`. */
export function dataAnswer(
  description: string,
  resource: z.ZodType,
): { description: string; schema: z.ZodType } {
  return { description, schema: z.strictObject({ data: resource }) };
}

/**
 * A handler for one resource by id: 200 `{ data }` with what `find` found for `:id` (serialized),
 * or the 404 `notFound` makes.
 */
export function answerFound<T>(
  find: (id: string) => Promise<T | null>,
  notFound: (id: string) => ApiError,
  serialize: (found: T) => unknown,
): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const found = await find(req.params.id);
    if (!found) throw notFound(req.params.id);
    res.json({ data: serialize(found) });
  };
}
