import type { RequestHandler } from 'express';
import { ApiError } from '@herald/contract';
import { cancelBulkJob, findBulkJob, type Db } from '@herald/store';
import { serializeBulkJob } from '../bulk-jobs/serialize.js';

/** 404 in the envelope for an unknown bulk job id. */
const bulkJobNotFound = (id: string): ApiError =>
  new ApiError('NOT_FOUND', { message: `No bulk job with id "${id}"`, id });

/** GET /bulk_jobs/:id → 200: the job and how far it got. */
export function retrieveBulkJob(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const job = await findBulkJob(deps.db, req.params.id);
    if (!job) throw bulkJobNotFound(req.params.id);
    res.json({ data: serializeBulkJob(job) });
  };
}

/**
 * POST /bulk_jobs/:id/cancel → 200: the job stops at its next batch (what is being sent still
 * goes). A job already finished is answered as it is.
 */
export function cancelBulkJobRoute(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const job = await cancelBulkJob(deps.db, req.params.id);
    if (!job) throw bulkJobNotFound(req.params.id);
    res.json({ data: serializeBulkJob(job) });
  };
}
