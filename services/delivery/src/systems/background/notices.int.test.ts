import { describe, expect } from 'vitest';
import type { WebhookEventEntry } from '@herald/contract';
import { createBulkJob } from '@herald/store';
import { startReceiver, type Received, waitFor } from '@herald/testkit';
import {
  addWebhook,
  emitEvents,
  itemEvent,
  itemEventsIn,
  pipelineTest,
  webhookInput,
} from '../../harness.test-support.js';

// Notices end to end (docs/api.md, Notices): Herald's own events about a webhook's health and
// its bulk jobs, delivered through the pipeline to the webhooks that subscribe to them.
const it = pipelineTest({
  noticeFailures: 3,
  circuit: { failures: 4, cooldownMs: 400 },
  retry: { scheduleMs: [100, 100, 100, 100, 100, 100, 100, 100], jitter: 0, retryAfterMaxMs: 0 },
});

interface NoticeBody {
  entity_type: string;
  event_type: string;
  entity: { type: string; id: string; attributes: Record<string, unknown> };
}

const notices = (requests: Received[]): NoticeBody[] =>
  requests.map((request) => JSON.parse(request.body) as NoticeBody);

const ALL_NOTICES: WebhookEventEntry[] = [
  {
    entity_type: 'notice',
    event_types: ['failing', 'recovered', 'circuit_opened', 'disabled', 'bulk_job_finished'],
  },
];

describe('notices', () => {
  it('tell another webhook that one is failing, its circuit opened, then that it recovered', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const told = await startReceiver();
    try {
      await addWebhook(db, pipeline, webhookInput(told.url, { name: 'ops', events: ALL_NOTICES }));
      let down = true;
      receiver.respond = (_req, res) => res.writeHead(down ? 503 : 200).end();
      const env = 'notices-env';
      const failing = await addWebhook(
        db,
        pipeline,
        // Subscribed to notices too: still never told about itself.
        webhookInput(receiver.url, {
          name: 'search indexer',
          events: [...itemEventsIn(env), ...ALL_NOTICES],
        }),
      );
      await emitEvents(db, pipeline, [
        itemEvent({ environment: env }),
        itemEvent({ environment: env }),
      ]);

      await waitFor(
        () => {
          const kinds = notices(told.requests).map((n) => n.event_type);
          expect(kinds).toContain('failing');
          expect(kinds).toContain('circuit_opened');
        },
        { timeout: 10_000, interval: 50 },
      );
      const failingNotice = notices(told.requests).find((n) => n.event_type === 'failing')!;
      expect(failingNotice).toMatchObject({
        entity_type: 'notice',
        entity: {
          type: 'notice',
          attributes: {
            kind: 'failing',
            webhook_id: failing.id,
            webhook_name: 'search indexer',
            message: expect.stringContaining('search indexer'),
          },
        },
      });
      expect((failingNotice.entity.attributes['failure_streak'] as number) >= 3).toBe(true);
      // Never to the webhook the notice is about (matched with the same job as the told one's).
      const { rows } = await db.query<{ n: string }>(
        "SELECT count(*) AS n FROM webhook_calls WHERE webhook_id = $1 AND entity_type = 'notice'",
        [failing.id],
      );
      expect(Number(rows[0]!.n)).toBe(0);

      down = false;
      await waitFor(
        () => expect(notices(told.requests).map((n) => n.event_type)).toContain('recovered'),
        { timeout: 10_000, interval: 50 },
      );
      // Each change told once.
      const kinds = notices(told.requests).map((n) => n.event_type);
      expect(kinds.filter((k) => k === 'failing')).toHaveLength(1);
      expect(kinds.filter((k) => k === 'recovered')).toHaveLength(1);
    } finally {
      await told.close();
    }
  });

  it('tell a webhook disabled by a 410, with its reason, and a bulk job that ended', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const told = await startReceiver();
    try {
      await addWebhook(
        db,
        pipeline,
        webhookInput(told.url, { name: 'ops-2', events: ALL_NOTICES }),
      );
      receiver.respond = (_req, res) => res.writeHead(410).end();
      const env = 'notices-gone-env';
      const gone = await addWebhook(
        db,
        pipeline,
        webhookInput(receiver.url, { name: 'retired', events: itemEventsIn(env) }),
      );
      await emitEvents(db, pipeline, [itemEvent({ environment: env })]);
      await waitFor(
        () => {
          const disabled = notices(told.requests).find(
            (n) => n.event_type === 'disabled' && n.entity.attributes['webhook_id'] === gone.id,
          );
          expect(disabled?.entity.attributes['disabled_reason']).toMatch(/410 Gone/);
        },
        { timeout: 10_000, interval: 50 },
      );

      const job = await createBulkJob(db, {
        kind: 'bulk_resend',
        webhookId: gone.id,
        filter: { webhook_id: gone.id, status: 'success' },
        ratePerSecond: null,
      });
      await waitFor(
        () => {
          const ended = notices(told.requests).find((n) => n.event_type === 'bulk_job_finished');
          expect(ended?.entity.attributes).toMatchObject({
            bulk_job_id: job.id,
            state: 'completed',
            matched: 0,
          });
        },
        { timeout: 10_000, interval: 50 },
      );
    } finally {
      await told.close();
    }
  });
});
