import type { BulkJob } from './types.js';

/**
 * Bulk jobs (docs/api.md, Bulk jobs) as the console starts and shows them: the filter of a bulk
 * resend made from the call log's filters, a replay's range from two local times, and a job's
 * progress in words.
 */

/** `datetime-local` gives local wall time; the API wants an instant. */
export function toInstant(local: string): string | undefined {
  if (!local) return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The call log's filters, as its URL keeps them. */
export interface CallFilters {
  webhook: string;
  status: string;
  entity: string;
  event: string;
  from: string;
  to: string;
}

function range(from: string, to: string): { gt?: string; lt?: string } | undefined {
  const gt = toInstant(from);
  const lt = toInstant(to);
  if (!gt && !lt) return undefined;
  return { ...(gt ? { gt } : {}), ...(lt ? { lt } : {}) };
}

/** A bulk resend's filter selecting exactly the calls the log shows with these filters. */
export function resendFilter(filters: CallFilters): Record<string, unknown> {
  const created = range(filters.from, filters.to);
  return {
    ...(filters.webhook ? { webhook_id: filters.webhook } : {}),
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.entity ? { entity_type: filters.entity } : {}),
    ...(filters.event ? { event_type: filters.event } : {}),
    ...(created ? { created_at: created } : {}),
  };
}

/** A replay's filter: the events that occurred between two local times (either may be empty). */
export function replayFilter(from: string, to: string): Record<string, unknown> {
  const occurred = range(from, to);
  return occurred ? { occurred_at: occurred } : {};
}

/** A pace as typed: empty is unpaced (null); anything else must be a number in the API's range. */
export function parsePace(text: string): { value: number | null } | { error: string } {
  const trimmed = text.trim();
  if (trimmed === '') return { value: null };
  const value = Number(trimmed);
  if (!Number.isFinite(value) || value <= 0 || value > 10_000) {
    return { error: 'A pace is a number of calls per second above 0, at most 10000.' };
  }
  return { value };
}

/** The bulk_job document that POST /bulk_jobs takes. */
export function bulkJobBody(attributes: Record<string, unknown>, pace: number | null = null) {
  return {
    data: {
      type: 'bulk_job',
      attributes: { ...attributes, ...(pace === null ? {} : { rate_per_second: pace }) },
    },
  };
}

const ACTIVE_STATES: readonly BulkJob['attributes']['state'][] = ['queued', 'running'];

export function isActive(job: BulkJob): boolean {
  return ACTIVE_STATES.includes(job.attributes.state);
}

/** "120 of 500 sent (24 %)", or "Selecting…" before the job knows how many it matched. */
export function describeProgress(job: BulkJob): string {
  const { matched, done, progress } = job.attributes;
  if (matched === null)
    return job.attributes.state === 'queued' ? 'Waiting to start…' : 'Selecting…';
  const percent = Math.floor((progress ?? 0) * 100);
  return `${done} of ${matched} done (${percent} %)`;
}

export const KIND_LABEL: Record<BulkJob['attributes']['kind'], string> = {
  bulk_resend: 'Bulk resend',
  replay: 'Replay',
};
