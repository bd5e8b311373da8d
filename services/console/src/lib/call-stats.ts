import type { WebhookCallResource, WebhookCallStatus } from '@herald/contract/tables';

/** What the webhook list shows of a webhook's recent calls. */
export interface CallSummary {
  lastStatus: WebhookCallStatus;
  lastResponseStatus: number | null;
  lastAt: string;
  /** Answered calls (success or failed or rescheduled) among the recent ones. */
  answered: number;
  succeeded: number;
}

/**
 * Summarizes calls per webhook id, from a page of recent calls in any order: the newest call's
 * status, and the share of successes among calls that have an outcome (pending ones have none).
 */
export function summarizeCalls(calls: readonly WebhookCallResource[]): Map<string, CallSummary> {
  const byWebhook = new Map<string, WebhookCallResource[]>();
  for (const call of calls) {
    const id = call.relationships?.webhook?.data?.id;
    if (!id) continue;
    const list = byWebhook.get(id) ?? [];
    list.push(call);
    byWebhook.set(id, list);
  }
  const summaries = new Map<string, CallSummary>();
  for (const [id, list] of byWebhook) {
    const sorted = [...list].sort(
      (a, b) => Date.parse(b.attributes.created_at) - Date.parse(a.attributes.created_at),
    );
    const last = sorted[0]!;
    const outcomes = sorted.filter((call) => call.attributes.status !== 'pending');
    summaries.set(id, {
      lastStatus: last.attributes.status,
      lastResponseStatus: last.attributes.response_status,
      lastAt: last.attributes.last_sent_at ?? last.attributes.created_at,
      answered: outcomes.length,
      succeeded: outcomes.filter((call) => call.attributes.status === 'success').length,
    });
  }
  return summaries;
}

/** "83 %" or "—" when nothing has an outcome yet. */
export function formatRate(summary: Pick<CallSummary, 'answered' | 'succeeded'>): string {
  if (summary.answered === 0) return '—';
  return `${Math.round((summary.succeeded / summary.answered) * 100)} %`;
}
