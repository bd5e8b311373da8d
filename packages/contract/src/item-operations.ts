import { z } from 'zod';
import type { ApiOperation } from './api-operation.js';
import { ItemResource, totalCount } from './resources.js';

// The read service's operations (GET /items, GET /items/:id) as the OpenAPI document states them.
// They live here rather than beside read's handlers because ingest serves the document of the
// whole API in the split stack (the gateway sends /openapi.json to it) and no service imports
// another: both import these.

/** GET /items/:id query parameters (docs/api.md, GET /items/:id: `nested`, `version`). */
export const ItemsRetrieveQuery = z.looseObject({
  nested: z.enum(['true', 'false']).optional(),
  version: z.enum(['published', 'current']).optional(),
});
type ItemsRetrieveQuery = z.infer<typeof ItemsRetrieveQuery>;

/** The header the item routes read, as the OpenAPI document names it (docs/api.md). */
const ReadAfterHeaders = z.object({
  'x-herald-read-after': z
    .string()
    .optional()
    .meta({
      description:
        'The token of a 202 of POST /events (meta.read_after): read data at least that new ' +
        '(docs/api.md, Read your own events)',
    }),
});

/**
 * The parameters of GET /items as the document names them. Their rules need the model, so read's
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

const itemsListOperation: ApiOperation = {
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

const itemsRetrieveOperation: ApiOperation = {
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

/** The read service's operations, in the order of docs/api.md. */
export const itemOperations: readonly ApiOperation[] = [itemsListOperation, itemsRetrieveOperation];
