import { describe, expect, it } from 'vitest';
import { bulkJobBody, describeProgress, parsePace, replayFilter, resendFilter } from './bulk.js';
import type { BulkJob } from './types.js';

const job = (attributes: Partial<BulkJob['attributes']>): BulkJob => ({
  type: 'bulk_job',
  id: '1',
  attributes: {
    kind: 'bulk_resend',
    state: 'running',
    filter: {},
    rate_per_second: null,
    matched: null,
    done: 0,
    succeeded: 0,
    failed: 0,
    skipped: 0,
    progress: null,
    rate: null,
    failure_reason: null,
    created_at: '2026-01-01T00:00:00Z',
    started_at: null,
    finished_at: null,
    updated_at: '2026-01-01T00:00:00Z',
    ...attributes,
  },
  relationships: { webhook: { data: null } },
});

describe('bulk jobs', () => {
  it('turns the call log filters into a bulk resend filter, leaving out the empty ones', () => {
    expect(
      resendFilter({ webhook: '', status: '', entity: '', event: '', from: '', to: '' }),
    ).toEqual({});
    const from = '2026-03-01T09:00';
    expect(
      resendFilter({
        webhook: '2',
        status: 'failed',
        entity: 'item',
        event: 'publish',
        from,
        to: '',
      }),
    ).toEqual({
      webhook_id: '2',
      status: 'failed',
      entity_type: 'item',
      event_type: 'publish',
      created_at: { gt: new Date(from).toISOString() },
    });
  });

  it('makes a replay range from local times', () => {
    expect(replayFilter('', '')).toEqual({});
    const to = '2026-03-02T10:30';
    expect(replayFilter('', to)).toEqual({ occurred_at: { lt: new Date(to).toISOString() } });
  });

  it('reads a pace: empty is unpaced, out of range is refused', () => {
    expect(parsePace(' ')).toEqual({ value: null });
    expect(parsePace('2.5')).toEqual({ value: 2.5 });
    for (const bad of ['0', '-1', 'x', '10001']) expect(parsePace(bad)).toHaveProperty('error');
    expect(bulkJobBody({ kind: 'replay' }, 3)).toEqual({
      data: { type: 'bulk_job', attributes: { kind: 'replay', rate_per_second: 3 } },
    });
    expect(bulkJobBody({ kind: 'replay' }).data.attributes).toEqual({ kind: 'replay' });
  });

  it('says how far a job got', () => {
    expect(describeProgress(job({ state: 'queued' }))).toBe('Waiting to start…');
    expect(describeProgress(job({}))).toBe('Selecting…');
    expect(describeProgress(job({ matched: 8, done: 3, progress: 0.375 }))).toBe(
      '3 of 8 done (37 %)',
    );
  });
});
