import { Router } from 'express';
import { z } from 'zod';
import { ApiError, ItemResource } from '@herald/contract';
import { context, requireRole, type ApiOperation } from '@herald/runtime';
import { retrieveItem } from '../items.js';
import { ReadAfterHeaders, requestDb, type ReadSources } from '../replica.js';

/** GET /items/:id query parameters (docs/api.md, GET /items/:id: `nested`, `version`). */
export const ItemsRetrieveQuery = z.looseObject({
  nested: z.enum(['true', 'false']).optional(),
  version: z.enum(['published', 'current']).optional(),
});
type ItemsRetrieveQuery = z.infer<typeof ItemsRetrieveQuery>;

export const itemsRetrieveOperation: ApiOperation = {
  method: 'get',
  path: '/items/{id}',
  summary: 'One record',
  description: 'Other parameters are ignored.',
  tag: 'Records',
  access: { roles: ['read_only'] },
  query: ItemsRetrieveQuery,
  headers: ReadAfterHeaders,
  responses: { 200: { description: 'The record', schema: z.strictObject({ data: ItemResource }) } },
  errors: ['INVALID_READ_AFTER_HEADER', 'NOT_FOUND', 'QUERY_TIMEOUT'],
};

export function itemsRetrieveRoute(deps: { sources: ReadSources }): Router {
  const router = Router();
  router.get('/items/:id', requireRole('read_only'), async (req, res) => {
    const ctx = context(res);
    const parsed = ItemsRetrieveQuery.safeParse(ctx.query);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const param = String(issue.path[0] ?? '');
      throw new ApiError('INVALID_PARAMS', {
        param,
        message:
          param === 'nested' ? 'must be "true" or "false"' : 'must be "published" or "current"',
      });
    }
    const id = String(req.params['id'] ?? '');
    const item = await retrieveItem(
      { db: await requestDb(deps, req, ctx.auth!.tokenId) },
      ctx.environment!,
      id,
      parsed.data.version ?? 'published',
      parsed.data.nested === 'true',
    );
    if (!item) {
      throw new ApiError('NOT_FOUND', {
        message: `No record ${id} with a ${parsed.data.version ?? 'published'} version`,
        id,
      });
    }
    res.status(200).json({ data: item });
  });
  return router;
}
