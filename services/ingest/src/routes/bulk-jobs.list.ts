import type { RequestHandler } from 'express';
import { z } from 'zod';
import { BulkJobResource, totalCount } from '@herald/contract';
import { context } from '@herald/runtime';
import { listBulkJobs, type Db } from '@herald/store';
import { bulkJobsOperation } from '../admin-api.js';
import { serializeBulkJob } from '../bulk-jobs/serialize.js';
import { pageParams, parseQuery } from '../validation/query-params.js';

const BulkJobListQuery = z
  .object({
    page: pageParams(30),
    filter: z
      .object({ webhook_id: z.string().regex(/^[1-9]\d{0,17}$/, 'must be a webhook id') })
      .strict()
      .optional(),
  })
  .strict();

export const listBulkJobsOperation = bulkJobsOperation('get', '/bulk_jobs', {
  summary: 'The bulk jobs, newest first',
  query: BulkJobListQuery,
  responses: {
    200: {
      description: 'One page of jobs',
      schema: z.strictObject({ data: z.array(BulkJobResource), meta: totalCount }),
    },
  },
});

/** GET /bulk_jobs → 200: newest first, paginated, optionally one webhook's. */
export function listBulkJobsRoute(deps: { db: Db }): RequestHandler {
  return async (_req, res) => {
    const { page, filter } = parseQuery(BulkJobListQuery, context(res).query);
    const { jobs, totalCount } = await listBulkJobs(deps.db, {
      ...(filter ? { webhookId: filter.webhook_id } : {}),
      ...page,
    });
    res.json({ data: jobs.map(serializeBulkJob), meta: { total_count: totalCount } });
  };
}
