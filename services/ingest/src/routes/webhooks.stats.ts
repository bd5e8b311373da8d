import type { RequestHandler } from 'express';
import { z } from 'zod';
import { WebhookStatsResource, totalCount } from '@herald/contract';
import { context } from '@herald/runtime';
import {
  STATS_WINDOWS,
  latencyPercentile,
  readWebhookStats,
  type Db,
  type StatsWindow,
  type WebhookStats,
} from '@herald/store';
import { dataAnswer, webhooksOperation } from '../admin-api.js';
import { parseQuery } from '../validation/query-params.js';
import { webhookNotFound } from '../webhooks/errors.js';

/** The stats' window, 24 hours unless asked. */
const window = z.enum(Object.keys(STATS_WINDOWS) as [StatsWindow, ...StatsWindow[]]).default('24h');
/** At most this many ids in GET /webhook_stats?filter[ids]= (a page of the webhook list). */
const MAX_IDS = 500;

const StatsQuery = z.object({ window }).strict();
/** GET /webhook_stats also takes filter[ids]: comma-separated or repeated webhook ids. */
const StatsListQuery = z
  .object({
    window,
    filter: z
      .object({
        ids: z
          .union([z.string(), z.array(z.string())])
          .transform((value) => (Array.isArray(value) ? value : value.split(',')))
          .pipe(
            z
              .array(z.string().regex(/^[1-9]\d{0,17}$/, 'must be webhook ids'))
              .max(MAX_IDS, `at most ${MAX_IDS} ids`),
          ),
      })
      .strict()
      .optional(),
  })
  .strict();

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);
/** Milliseconds to a tenth. */
const ms = (value: number | null): number | null =>
  value === null ? null : Math.round(value * 10) / 10;

function serializeWebhookStats(stats: WebhookStats, withBuckets: boolean): WebhookStatsResource {
  const { totals } = stats;
  const attempts = totals.attemptsSuccess + totals.attemptsFailure;
  const timed = totals.latencyBuckets.reduce((sum, count) => sum + count, 0);
  return {
    type: 'webhook_stats',
    id: stats.webhookId,
    attributes: {
      window: stats.window,
      granularity: stats.granularity,
      from: stats.from.toISOString(),
      to: stats.to.toISOString(),
      attempts: {
        total: attempts,
        success: totals.attemptsSuccess,
        failure: totals.attemptsFailure,
      },
      calls: { succeeded: totals.callsSucceeded, failed: totals.callsFailed },
      success_rate: attempts === 0 ? null : totals.attemptsSuccess / attempts,
      latency_ms: {
        p50: ms(latencyPercentile(totals.latencyBuckets, 0.5)),
        p95: ms(latencyPercentile(totals.latencyBuckets, 0.95)),
        p99: ms(latencyPercentile(totals.latencyBuckets, 0.99)),
        mean: timed === 0 ? null : ms(totals.latencyMsSum / timed),
      },
      last_success_at: iso(stats.lastSuccessAt),
      last_failure_at: iso(stats.lastFailureAt),
      failure_streak: stats.failureStreak,
      backlog: {
        pending: stats.backlog.pending,
        rescheduled: stats.backlog.rescheduled,
        oldest_age_seconds: stats.backlog.oldestCreatedAt
          ? Math.max(
              0,
              Math.round((stats.to.getTime() - stats.backlog.oldestCreatedAt.getTime()) / 1000),
            )
          : null,
      },
      circuit: {
        state: stats.circuit.state,
        open_until: iso(stats.circuit.openUntil),
        failures: stats.circuit.failures,
      },
      ...(withBuckets
        ? {
            buckets: stats.buckets.map((bucket) => ({
              start: bucket.start.toISOString(),
              attempts_success: bucket.attemptsSuccess,
              attempts_failure: bucket.attemptsFailure,
              calls_succeeded: bucket.callsSucceeded,
              calls_failed: bucket.callsFailed,
              latency_ms_p50: ms(latencyPercentile(bucket.latencyBuckets, 0.5)),
            })),
          }
        : {}),
    },
    relationships: { webhook: { data: { type: 'webhook', id: stats.webhookId } } },
  };
}

export const webhookStatsOperation = webhooksOperation('get', '/webhooks/{id}/stats', {
  summary: "A webhook's health over a window",
  extension: true,
  query: StatsQuery,
  responses: { 200: dataAnswer('The stats, with buckets', WebhookStatsResource) },
  errors: ['NOT_FOUND'],
});

export const listWebhookStatsOperation = webhooksOperation('get', '/webhook_stats', {
  summary: "Every webhook's health, or the listed ones'",
  extension: true,
  query: StatsListQuery,
  responses: {
    200: {
      description: 'The stats without buckets, ordered by webhook id',
      schema: z.strictObject({ data: z.array(WebhookStatsResource), meta: totalCount }),
    },
  },
});

/** GET /webhooks/:id/stats?window=1h|24h|7d|30d → 200 with the buckets (extension); 404. */
export function webhookStatsRoute(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const { window } = parseQuery(StatsQuery, context(res).query);
    const [stats] = await readWebhookStats(deps.db, window, [req.params.id]);
    if (!stats) throw webhookNotFound(req.params.id);
    res.json({ data: serializeWebhookStats(stats, true) });
  };
}

/**
 * GET /webhook_stats?window=…[&filter[ids]=…] → 200: every webhook's stats, or those of the
 * listed webhooks that exist, without buckets (extension).
 */
export function listWebhookStatsRoute(deps: { db: Db }): RequestHandler {
  return async (_req, res) => {
    const { window, filter } = parseQuery(StatsListQuery, context(res).query);
    const all = await readWebhookStats(deps.db, window, filter?.ids ?? null);
    res.json({
      data: all.map((stats) => serializeWebhookStats(stats, false)),
      meta: { total_count: all.length },
    });
  };
}
