import type { RequestHandler } from 'express';
import { z } from 'zod';
import { context } from '@herald/runtime';
import { listBulkJobs, type Db } from '@herald/store';
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
