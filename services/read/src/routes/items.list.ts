import { Router } from 'express';
import { context, requireRole } from '@herald/runtime';
import { listItems, type ItemsDeps } from '../items.js';

/**
 * GET /items (API.md §3.2, §3.3). The query string is validated by query/list-query.ts (its
 * rules need the model, so they are code rather than one zod schema) and compiled to SQL by
 * query/compile.ts.
 */
export function itemsListRoute(deps: ItemsDeps): Router {
  const router = Router();
  router.get('/items', requireRole('read_only'), async (_req, res) => {
    const ctx = context(res);
    const page = await listItems(deps, ctx.environment!, ctx.query);
    res.status(200).json(page);
  });
  return router;
}
