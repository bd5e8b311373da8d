import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, BulkJobResource } from '@herald/contract';
import { cancelBulkJob, findBulkJob, type Db } from '@herald/store';
import { answerFound, bulkJobsOperation } from '../admin-api.js';
import { serializeBulkJob } from '../bulk-jobs/serialize.js';

/** 404 in the envelope for an unknown bulk job id. */
const bulkJobNotFound = (id: string): ApiError =>
  new ApiError('NOT_FOUND', { message: `No bulk job with id "${id}"`, id });

const BulkJobAnswer = z.strictObject({ data: BulkJobResource });

export const retrieveBulkJobOperation = bulkJobsOperation('get', '/bulk_jobs/{id}', {
  summary: 'A bulk job and how far it got',
  responses: { 200: { description: 'The job', schema: BulkJobAnswer } },
  errors: ['NOT_FOUND'],
});

export const cancelBulkJobOperation = bulkJobsOperation('post', '/bulk_jobs/{id}/cancel', {
  summary: 'Stop a queued or running job',
  description: 'A job already ended is answered as it is.',
  responses: { 200: { description: 'The job', schema: BulkJobAnswer } },
  errors: ['NOT_FOUND'],
});

/** GET /bulk_jobs/:id → 200: the job and how far it got. */
export function retrieveBulkJob(deps: { db: Db }): RequestHandler<{ id: string }> {
  return answerFound((id) => findBulkJob(deps.db, id), bulkJobNotFound, serializeBulkJob);
}

/**
 * POST /bulk_jobs/:id/cancel → 200: the job stops at its next batch (what is being sent still
 * goes). A job already finished is answered as it is.
 */
export function cancelBulkJobRoute(deps: { db: Db }): RequestHandler<{ id: string }> {
  return answerFound((id) => cancelBulkJob(deps.db, id), bulkJobNotFound, serializeBulkJob);
}
