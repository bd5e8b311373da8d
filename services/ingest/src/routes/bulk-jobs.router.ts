import { Router } from 'express';
import { requireRole, type ApiAppDeps } from '@herald/runtime';
import { createBulkJobRoute } from './bulk-jobs.create.js';
import { listBulkJobsRoute } from './bulk-jobs.list.js';
import { cancelBulkJobRoute, retrieveBulkJob } from './bulk-jobs.retrieve.js';

/** /bulk_jobs (extension; docs/api.md, Bulk jobs): admin only, like /webhook_calls. */
export function bulkJobsRouter(deps: ApiAppDeps): Router {
  const router = Router();
  const admin = requireRole();
  router.post('/bulk_jobs', admin, createBulkJobRoute(deps));
  router.get('/bulk_jobs', admin, listBulkJobsRoute(deps));
  router.get('/bulk_jobs/:id', admin, retrieveBulkJob(deps));
  router.post('/bulk_jobs/:id/cancel', admin, cancelBulkJobRoute(deps));
  return router;
}
