import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError } from '@herald/contract';
import { context } from '@herald/runtime';
import { listBulkJobs, type Db } from '@herald/store';
import { serializeBulkJob } from '../bulk-jobs/serialize.js';
import { decimalInteger } from './webhook-calls.list.js';

const BulkJobListQuery = z
  .object({
    page: z
      .object({
        offset: decimalInteger(0, Number.MAX_SAFE_INTEGER).default(0),
        limit: decimalInteger(1, 500).default(30),
      })
      .strict()
      .default({ offset: 0, limit: 30 }),
    filter: z
      .object({ webhook_id: z.string().regex(/^[1-9]\d{0,17}$/, 'must be a webhook id') })
      .strict()
      .optional(),
  })
  .strict();

/** GET /bulk_jobs → 200: newest first, paginated, optionally one webhook's. */
export function listBulkJobsRoute(deps: { db: Db }): RequestHandler {
  return async (_req, res) => {
    const parsed = BulkJobListQuery.safeParse(context(res).query);
    if (!parsed.success) {
      throw ApiError.many(
        parsed.error.issues.map((issue) => ({
          code: 'INVALID_PARAMS' as const,
          details: { param: issue.path.join('.'), message: issue.message },
        })),
      );
    }
    const { page, filter } = parsed.data;
    const { jobs, totalCount } = await listBulkJobs(deps.db, {
      ...(filter ? { webhookId: filter.webhook_id } : {}),
      ...page,
    });
    res.json({ data: jobs.map(serializeBulkJob), meta: { total_count: totalCount } });
  };
}
