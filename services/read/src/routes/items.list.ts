import { Router } from 'express';
import { z } from 'zod';
import { ItemResource, totalCount } from '@herald/contract';
import { context, requireRole, type ApiOperation } from '@herald/runtime';
import { listItems, type ItemsDeps } from '../items.js';
import { ReadAfterHeaders, requestDb, type ReadSources } from '../replica.js';
import { ItemsRetrieveQuery } from './items.retrieve.js';

/**
 * What the item routes get: the sources pick the replica or the primary for each request (its
 * X-Herald-Read-After), whose gate hands it its token's view of that database.
 */
export type ItemsRouteDeps = Omit<ItemsDeps, 'db'> & { sources: ReadSources };

/**
 * The parameters of GET /items as the document names them. Their rules need the model, so
 * query/list-query.ts checks them in code: this schema only says which there are (the two it
 * shares with GET /items/:id are that route's schema).
 */
const ItemsListParameters = ItemsRetrieveQuery.extend({
  filter: z
    .looseObject({})
    .optional()
    .meta({
      description:
        '`filter[ids]`, `filter[type]`, `filter[query]`, `filter[fields][<key>][<operator>]`, ' +
        '`filter[only_valid]` (docs/api.md, GET /items and Field filters)',
    }),
  order_by: z
    .string()
    .optional()
    .meta({ description: '`<key>_ASC` or `<key>_DESC`, comma-separated' }),
  locale: z.string().optional().meta({ description: "One of the environment's locales" }),
  page: z
    .looseObject({ offset: z.string().optional(), limit: z.string().optional() })
    .optional()
    .meta({ description: '`page[offset]` (default 0), `page[limit]` (1–500, default 30)' }),
});

export const itemsListOperation: ApiOperation = {
  method: 'get',
  path: '/items',
  summary: 'List records',
  tag: 'Records',
  access: { roles: ['read_only'] },
  query: ItemsListParameters,
  headers: ReadAfterHeaders,
  responses: {
    200: {
      description: 'One page of records',
      schema: z.strictObject({ data: z.array(ItemResource), meta: totalCount }),
    },
  },
  errors: [
    'INVALID_READ_AFTER_HEADER',
    'INVALID_FILTER',
    'INVALID_FILTER_FIELDS_PARAM',
    'INVALID_ORDERING',
    'INVALID_LOCALE',
    'QUERY_TIMEOUT',
  ],
};

/**
 * GET /items (docs/api.md, GET /items and Field filters). The query string is validated by
 * query/list-query.ts (its rules need the model, so they are code rather than one zod schema) and
 * compiled to SQL by query/compile.ts.
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
