import type { RequestHandler } from 'express';
import { z } from 'zod';
import {
  ApiError,
  BulkJobResource,
  WEBHOOK_CALL_STATUSES,
  type ErrorEntry,
} from '@herald/contract';
import { requestDocument } from '@herald/runtime';
import { createBulkJob, findWebhook, type Db, type InstantRange } from '@herald/store';
import { bulkJobsOperation, dataAnswer } from '../admin-api.js';
import { serializeBulkJob } from '../bulk-jobs/serialize.js';
import { instantRange } from '../validation/query-params.js';
import { attributesError, parse } from '../validation/zod-errors.js';
import { readActionDocument } from './webhooks.preview.js';

const WebhookId = z.string().regex(/^[1-9]\d{0,17}$/, 'must be a webhook id');
const Range = instantRange.transform((range): InstantRange => ({
  ...(range.gt ? { gt: range.gt.toISOString() } : {}),
  ...(range.lt ? { lt: range.lt.toISOString() } : {}),
}));
const Text = z.string().min(1).max(255);
const RatePerSecond = z.number().positive().max(10_000).nullable().default(null);

/** A bulk resend: the calls the filter selects (every call when it selects nothing), sent again. */
const BulkResendAttributes = z
  .object({
    kind: z.literal('bulk_resend'),
    filter: z
      .object({
        webhook_id: WebhookId.optional(),
        status: z.enum(WEBHOOK_CALL_STATUSES).optional(),
        created_at: Range.optional(),
        entity_type: Text.optional(),
        event_type: Text.optional(),
        entity_id: Text.optional(),
      })
      .strict()
      .default({}),
    rate_per_second: RatePerSecond,
  })
  .strict();

/** A replay: the stored events of a range its webhook's entries match, sent to it in order. */
const ReplayAttributes = z
  .object({
    kind: z.literal('replay'),
    webhook_id: WebhookId,
    filter: z.object({ occurred_at: Range.optional() }).strict().default({}),
    rate_per_second: RatePerSecond,
  })
  .strict();

const BulkJobAttributes = z.discriminatedUnion('kind', [BulkResendAttributes, ReplayAttributes], {
  error: 'kind must be "bulk_resend" or "replay"',
});

export const createBulkJobOperation = bulkJobsOperation('post', '/bulk_jobs', {
  summary: 'Create a bulk resend or a replay',
  body: { schema: requestDocument('bulk_job', BulkJobAttributes), required: true },
  responses: { 202: dataAnswer('The job, queued', BulkJobResource) },
  errors: ['INVALID_FORMAT', 'INVALID_ATTRIBUTES'],
});

/**
 * POST /bulk_jobs → 202 (extension; docs/api.md, Bulk jobs): a bulk resend or a replay, stored
 * and queued; a delivery process runs it in the background. The answer is the job, queued;
 * GET /bulk_jobs/:id follows it.
 */
export function createBulkJobRoute(deps: { db: Db }): RequestHandler {
  return async (req, res) => {
    const attributes = readActionDocument(req.body, 'bulk_job');
    const parsed = parse(BulkJobAttributes, attributes);
    if (parsed.issues) {
      throw attributesError(parsed.issues, attributes, `for a ${String(attributes['kind'])} job`);
    }
    const job = parsed.value;
    const problems: ErrorEntry[] = [];
    const webhookId = job.kind === 'replay' ? job.webhook_id : job.filter.webhook_id;
    const field = job.kind === 'replay' ? 'webhook_id' : 'filter.webhook_id';
    if (webhookId !== undefined) {
      const webhook = await findWebhook(deps.db, webhookId);
      if (!webhook) {
        problems.push(
          ApiError.field(field, 'VALIDATION_INCLUSION', `No webhook with id "${webhookId}"`),
        );
      } else if (job.kind === 'replay' && !webhook.enabled) {
        problems.push(
          ApiError.field(
            field,
            'VALIDATION_INCLUSION',
            `Webhook "${webhookId}" is disabled: enable it first, then replay what it missed`,
          ),
        );
      }
    }
    for (const [name, range] of Object.entries({
      'filter.created_at': job.kind === 'bulk_resend' ? job.filter.created_at : undefined,
      'filter.occurred_at': job.kind === 'replay' ? job.filter.occurred_at : undefined,
    })) {
      if (range?.gt && range.lt && range.gt >= range.lt) {
        problems.push(
          ApiError.field(name, 'VALIDATION_FORMAT', 'gt must be before lt: the range is empty'),
        );
      }
    }
    if (problems.length > 0) throw ApiError.many(problems);
    const created = await createBulkJob(deps.db, {
      kind: job.kind,
      webhookId: webhookId ?? null,
      filter: job.filter,
      ratePerSecond: job.rate_per_second,
    });
    res.status(202).json({ data: serializeBulkJob(created) });
  };
}
