import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError } from '@herald/contract';
import { context } from '@herald/runtime';
import { WEBHOOK_CALL_STATUSES, findWebhooks, listWebhookCalls, type Db } from '@herald/store';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';
import { serializeWebhook } from '../webhooks/serialize.js';

const ORDERS = [
  'created_at_asc',
  'created_at_desc',
  'last_sent_at_asc',
  'last_sent_at_desc',
  'next_retry_at_asc',
  'next_retry_at_desc',
  'webhook_id_asc',
  'webhook_id_desc',
] as const;

const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * An ISO-8601 date or date-time, without a zone meaning UTC (as GET /items reads them), in years
 * 0001–9999; null for anything else. Date.parse accepted far more ("1", "March 7", years Postgres
 * cannot hold), which either meant something unintended or failed in Postgres (a 500).
 */
function parseInstant(text: string): Date | null {
  const m = ISO_INSTANT.exec(text);
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const day = new Date(0);
  day.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  if (day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const [hours, minutes] = [Number(digits.slice(0, 2)), Number(digits.slice(2))];
    if (hours > 15 || minutes > 59) return null;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
  }
  const millis = Math.floor(Number(`0${frac}`) * 1000);
  const instant = new Date(
    day.getTime() +
      ((Number(h) * 60 + Number(mi) - offsetMinutes) * 60 + Number(s)) * 1000 +
      millis,
  );
  const year = instant.getUTCFullYear();
  return year >= 1 && year <= 9999 ? instant : null;
}

const dateBound = z.string().transform((value, ctx) => {
  const instant = parseInstant(value);
  if (instant) return instant;
  ctx.addIssue({
    code: 'custom',
    message:
      'must be an ISO-8601 date or date-time (YYYY-MM-DDThh:mm:ss, zone optional: UTC) in years 0001–9999',
  });
  return z.NEVER;
});
/** A decimal integer as the query string carries it: no sign, exponent, hex or blank. */
export const decimalInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, 'must be a decimal integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
const range = z.object({ gt: dateBound.optional(), lt: dateBound.optional() }).strict();
const eq = z.object({ eq: z.string().min(1) }).strict();

/** GET /webhook_calls query (docs/api.md, GET /webhook_calls). */
const WebhookCallListQuery = z
  .object({
    page: z
      .object({
        offset: decimalInteger(0, Number.MAX_SAFE_INTEGER).default(0),
        limit: decimalInteger(1, 500).default(30),
      })
      .strict()
      .default({ offset: 0, limit: 30 }),
    filter: z
      .object({
        ids: z
          .union([z.string(), z.array(z.string())])
          .transform((v) => (Array.isArray(v) ? v : v.split(',')))
          .optional(),
        fields: z
          .object({
            webhook_id: eq.optional(),
            entity_type: eq.optional(),
            event_type: eq.optional(),
            event_id: eq.optional(),
            entity_id: eq.optional(),
            status: z
              .object({ eq: z.enum(WEBHOOK_CALL_STATUSES as [string, ...string[]]) })
              .strict()
              .optional(),
            created_at: range.optional(),
            last_sent_at: range.optional(),
            next_retry_at: range.optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    order_by: z.enum(ORDERS).default('created_at_asc'),
  })
  .strict();
type WebhookCallListQuery = z.infer<typeof WebhookCallListQuery>;

/**
 * GET /webhook_calls → 200, paginated, with meta.total_count (exact or an upper bound: see
 * listWebhookCalls) and the page's webhooks in `included`, as DatoCMS answers.
 */
export function listWebhookCallsRoute(deps: { db: Db }): RequestHandler {
  return async (_req, res) => {
    const parsed = WebhookCallListQuery.safeParse(context(res).query);
    if (!parsed.success) {
      throw ApiError.many(
        parsed.error.issues.map((issue) => ({
          code: 'INVALID_PARAMS' as const,
          details: { param: issue.path.join('.'), message: issue.message },
        })),
      );
    }
    const query = parsed.data;
    const fields = query.filter?.fields;
    const order = query.order_by.match(/^(.*)_(asc|desc)$/)!;
    const { calls, totalCount } = await listWebhookCalls(deps.db, {
      ...(query.filter?.ids ? { ids: query.filter.ids } : {}),
      eq: {
        webhook_id: fields?.webhook_id?.eq,
        entity_type: fields?.entity_type?.eq,
        event_type: fields?.event_type?.eq,
        status: fields?.status?.eq,
        event_id: fields?.event_id?.eq,
        entity_id: fields?.entity_id?.eq,
      },
      range: {
        created_at: fields?.created_at,
        last_sent_at: fields?.last_sent_at,
        next_retry_at: fields?.next_retry_at,
      },
      orderBy: {
        column: order[1] as 'created_at' | 'last_sent_at' | 'next_retry_at' | 'webhook_id',
        desc: order[2] === 'desc',
      },
      offset: query.page.offset,
      limit: query.page.limit,
    });
    // A deleted webhook is simply not there.
    const webhooks = await findWebhooks(deps.db, [...new Set(calls.map((c) => c.webhookId))]);
    res.json({
      data: calls.map(serializeWebhookCall),
      included: webhooks.map(serializeWebhook),
      meta: { total_count: totalCount },
    });
  };
}
