import { Router } from 'express';
import { context, requireRole } from '@herald/runtime';
import { listItems, type ItemsDeps } from '../items.js';
import { requestDb, type ReadSources } from '../replica.js';

/**
 * What the item routes get: the sources pick the replica or the primary for each request (its
 * X-Herald-Read-After), whose gate hands it its token's view of that database.
 */
export type ItemsRouteDeps = Omit<ItemsDeps, 'db'> & { sources: ReadSources };

/**
 * GET /items (docs/api.md, GET /items and Field filters). The query string is validated by
 * query/list-query.ts (its rules need the model, so they are code rather than one zod schema) and
 * compiled to SQL by query/compile.ts. Its OpenAPI operation is the contract's (item-operations.ts:
 * ingest serves the document too).
 */
export function itemsListRoute(deps: ItemsRouteDeps): Router {
  const router = Router();
  router.get('/items', requireRole('read_only'), async (req, res) => {
    const ctx = context(res);
    const db = await requestDb(deps, req, ctx.auth!.tokenId);
    const page = await listItems({ ...deps, db }, ctx.environment!, ctx.query);
    res.status(200).json(page);
  });
  return router;
}
