import type { WebhookStatsResource } from '@herald/contract/tables';

/** What the webhook list shows of a webhook's health (GET /webhook_stats). */
export interface HealthSummary {
  /** The newest attempt's outcome; null when it has none. */
  last: { outcome: 'success' | 'failed'; at: string } | null;
  /** "83 %", or "—" without attempts in the window. */
  rate: string;
  /** "5 of 6 attempts in 24 h". */
  rateTitle: string;
  failureStreak: number;
  /** Calls not finished now. */
  backlog: number;
  /** "Circuit open until 10:42:05", "Circuit half-open (probing)", or null when closed. */
  circuit: string | null;
}

/** Summarizes a webhook's stats for the list. */
export function summarizeHealth(stats: WebhookStatsResource): HealthSummary {
  const a = stats.attributes;
  const success = a.last_success_at ? Date.parse(a.last_success_at) : -Infinity;
  const failure = a.last_failure_at ? Date.parse(a.last_failure_at) : -Infinity;
  const last =
    success === -Infinity && failure === -Infinity
      ? null
      : success >= failure
        ? { outcome: 'success' as const, at: a.last_success_at! }
        : { outcome: 'failed' as const, at: a.last_failure_at! };
  return {
    last,
    rate: a.success_rate === null ? '—' : `${Math.round(a.success_rate * 100)} %`,
    rateTitle: `${a.attempts.success} of ${a.attempts.total} attempts in ${a.window.replace(/(\d+)/, '$1 ')}`,
    failureStreak: a.failure_streak,
    backlog: a.backlog.pending + a.backlog.rescheduled,
    circuit:
      a.circuit.state === 'open'
        ? `Circuit open until ${new Date(a.circuit.open_until!).toLocaleTimeString()}`
        : a.circuit.state === 'half_open'
          ? 'Circuit half-open (probing)'
          : null,
  };
}
