import { Router } from 'express';
import { ApiError, ItemsRetrieveQuery } from '@herald/contract';
import { context, requireRole } from '@herald/runtime';
import { retrieveItem } from '../items.js';
import { requestDb, type ReadSources } from '../replica.js';

/**
 * GET /items/:id. Its query schema and OpenAPI operation are the contract's (item-operations.ts:
 * ingest serves the document too).
 */
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
