import type { BulkJobResource } from '@herald/contract';
import type { BulkJobRecord } from '@herald/store';

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** The bulk_job resource (extension; docs/api.md, Bulk jobs). */
export function serializeBulkJob(job: BulkJobRecord): BulkJobResource {
  const done = job.succeeded + job.failed + job.skipped;
  return {
    type: 'bulk_job' as const,
    id: job.id,
    attributes: {
      kind: job.kind,
      state: job.state,
      filter: job.filter,
      rate_per_second: job.ratePerSecond,
      // null while the selection is being made.
      matched: job.matched,
      done,
      succeeded: job.succeeded,
      failed: job.failed,
      skipped: job.skipped,
      progress: job.matched === null ? null : job.matched === 0 ? 1 : done / job.matched,
      rate: job.observedRate === null ? null : Math.round(job.observedRate * 10) / 10,
      failure_reason: job.failureReason,
      created_at: job.createdAt.toISOString(),
      started_at: iso(job.startedAt),
      finished_at: iso(job.finishedAt),
      updated_at: job.updatedAt.toISOString(),
    },
    relationships: {
      webhook: { data: job.webhookId ? { type: 'webhook' as const, id: job.webhookId } : null },
    },
  };
}
