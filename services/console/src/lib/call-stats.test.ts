import { describe, expect, it } from 'vitest';
import type { WebhookCallResource, WebhookCallStatus } from '@herald/contract/tables';
import { formatRate, summarizeCalls } from './call-stats.js';

function call(
  id: string,
  webhook: string,
  status: WebhookCallStatus,
  at: string,
  code: number | null,
) {
  return {
    type: 'webhook_call',
    id,
    attributes: {
      entity_type: 'item',
      event_type: 'publish',
      created_at: at,
      request_url: null,
      request_headers: null,
      request_payload: null,
      response_status: code,
      response_headers: null,
      response_payload: null,
      attempted_auto_retries_count: 0,
      last_sent_at: at,
      next_retry_at: null,
      status,
      failure_reason: null,
      event_id: `event-${id}`,
    },
    relationships: { webhook: { data: { type: 'webhook', id: webhook } } },
  } satisfies WebhookCallResource;
}

describe('summarizeCalls', () => {
  it('gives each webhook its newest status and its success rate over answered calls', () => {
    const summaries = summarizeCalls([
      call('1', 'a', 'success', '2026-01-01T00:00:01Z', 200),
      call('3', 'a', 'failed', '2026-01-01T00:00:03Z', 500),
      call('2', 'a', 'success', '2026-01-01T00:00:02Z', 200),
      call('4', 'a', 'pending', '2026-01-01T00:00:00Z', null),
      call('5', 'b', 'pending', '2026-01-01T00:00:05Z', null),
    ]);
    expect(summaries.get('a')).toMatchObject({
      lastStatus: 'failed',
      lastResponseStatus: 500,
      answered: 3,
      succeeded: 2,
    });
    expect(formatRate(summaries.get('a')!)).toBe('67 %');
    expect(formatRate(summaries.get('b')!)).toBe('—');
    expect(summaries.has('c')).toBe(false);
  });
});
