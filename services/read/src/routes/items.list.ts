import { Router } from 'express';
import { context, requireRole } from '@herald/runtime';
import { listItems, type ItemsDeps } from '../items.js';
import type { ReadGate } from '../read-gate.js';

/** What the item routes get: the gate hands each request its token's view of the database. */
export type ItemsRouteDeps = Omit<ItemsDeps, 'db'> & { gate: ReadGate };

/**
 * GET /items (docs/api.md, GET /items and Field filters). The query string is validated by
 * query/list-query.ts (its rules need the model, so they are code rather than one zod schema) and
 * compiled to SQL by query/compile.ts.
 */
export function itemsListRoute(deps: ItemsRouteDeps): Router {
  const router = Router();
  router.get('/items', requireRole('read_only'), async (_req, res) => {
    const ctx = context(res);
    const db = deps.gate.forToken(ctx.auth!.tokenId);
    const page = await listItems({ ...deps, db }, ctx.environment!, ctx.query);
    res.status(200).json(page);
  });
  return router;
}
