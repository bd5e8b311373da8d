import type { RequestHandler } from 'express';
import { z } from 'zod';
import { IncludedWebhookResource, WebhookCallResource, totalCount } from '@herald/contract';
import { context } from '@herald/runtime';
import { WEBHOOK_CALL_STATUSES, findWebhooks, listWebhookCalls, type Db } from '@herald/store';
import { webhookCallsOperation } from '../admin-api.js';
import { instantRange, pageParams, parseQuery } from '../validation/query-params.js';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';
import { serializeIncludedWebhook } from '../webhooks/serialize.js';

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

const eq = z.object({ eq: z.string().min(1) }).strict();

/** GET /webhook_calls query (docs/api.md, GET /webhook_calls). */
const WebhookCallListQuery = z
  .object({
    page: pageParams(30),
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
              .object({ eq: z.enum(WEBHOOK_CALL_STATUSES) })
              .strict()
              .optional(),
            created_at: instantRange.optional(),
            last_sent_at: instantRange.optional(),
            next_retry_at: instantRange.optional(),
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

export const listWebhookCallsOperation = webhookCallsOperation('get', '/webhook_calls', {
  summary: 'List webhook calls',
  description:
    "`included` holds the page's webhooks; `meta.total_count` may be an upper bound past 10,000 " +
    '(docs/api.md, total_count of GET /webhook_calls).',
  query: WebhookCallListQuery,
  responses: {
    200: {
      description: 'One page of calls',
      schema: z.strictObject({
        data: z.array(WebhookCallResource),
        included: z.array(IncludedWebhookResource),
        meta: totalCount,
      }),
    },
  },
});

/**
 * GET /webhook_calls → 200, paginated, with meta.total_count (exact or an upper bound: see
 * listWebhookCalls) and the page's webhooks in `included`, as DatoCMS answers, without their
 * secrets (serializeIncludedWebhook).
 */
export function listWebhookCallsRoute(deps: { db: Db }): RequestHandler {
  return async (_req, res) => {
    const query = parseQuery(WebhookCallListQuery, context(res).query);
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
      included: webhooks.map(serializeIncludedWebhook),
      meta: { total_count: totalCount },
    });
  };
}
