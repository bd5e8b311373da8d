import type { WebhookStatsResource } from '@herald/contract/tables';

/**
 * The webhook page's charts read the buckets of GET /webhooks/:id/stats. The API lists only the
 * buckets that had attempts; a chart needs every bucket of the window on its time axis, so the
 * quiet ones are filled in: zero deliveries, and no latency (a gap in the line, not a zero).
 */
export interface StatsSeries {
  /** A bucket's length in seconds. */
  step: number;
  /** Each bucket's start, in seconds since the epoch (uPlot's time scale). */
  time: number[];
  success: number[];
  failure: number[];
  /** The median attempt duration of the bucket (ms); null without attempts. */
  latencyP50: (number | null)[];
}

const STEP_SECONDS = { minute: 60, hour: 3600 } as const;

export function statsSeries(stats: WebhookStatsResource['attributes']): StatsSeries {
  const step = STEP_SECONDS[stats.granularity];
  const from = Math.floor(Date.parse(stats.from) / 1000);
  const to = Math.floor(Date.parse(stats.to) / 1000);
  const byStart = new Map(
    (stats.buckets ?? []).map((bucket) => [Math.floor(Date.parse(bucket.start) / 1000), bucket]),
  );
  const series: StatsSeries = { step, time: [], success: [], failure: [], latencyP50: [] };
  for (let start = from; start <= to; start += step) {
    const bucket = byStart.get(start);
    series.time.push(start);
    series.success.push(bucket?.attempts_success ?? 0);
    series.failure.push(bucket?.attempts_failure ?? 0);
    series.latencyP50.push(bucket?.latency_ms_p50 ?? null);
  }
  return series;
}

/** "12 ms", "1.4 s", "—" for none. */
export function formatMs(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (value >= 1000) return `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)} s`;
  return `${value >= 100 ? Math.round(value) : Math.round(value * 10) / 10} ms`;
}

/** "45 s", "12 min", "3 h", "2 d": an age or a duration to read at a glance. */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.round(seconds / 360) / 10} h`;
  return `${Math.round(seconds / 8640) / 10} d`;
}
