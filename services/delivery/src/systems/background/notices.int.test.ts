import { describe, expect } from 'vitest';
import type { WebhookEventEntry } from '@herald/contract';
import { createBulkJob } from '@herald/store';
import { randomId, startReceiver, type Received, waitFor } from '@herald/testkit';
import {
  FAST_RETRIES,
  inEnvironment,
  itemEventsIn,
  outage,
  pipelineTest,
  webhookInput,
} from '../../harness.test-support.js';

// Notices end to end (docs/api.md, Notices): Herald's own events about a webhook's health and
// its bulk jobs, delivered through the pipeline to the webhooks that subscribe to them.
const ALL_NOTICES: WebhookEventEntry[] = [
  {
    entity_type: 'notice',
    event_types: ['failing', 'recovered', 'circuit_opened', 'disabled', 'bulk_job_finished'],
  },
];

const it = pipelineTest({
  noticeFailures: 3,
  circuit: { failures: 4, cooldownMs: 400 },
  retry: FAST_RETRIES,
}).extend('told', async ({ pipeline }, { onCleanup }) => {
  // Told of every notice: a webhook of the test's own that subscribes to them all.
  const told = await startReceiver();
  onCleanup(() => told.close());
  await pipeline.addWebhook(webhookInput(told.url, { name: randomId('ops'), events: ALL_NOTICES }));
  return told;
});

interface NoticeBody {
  entity_type: string;
  event_type: string;
  entity: { type: string; id: string; attributes: Record<string, unknown> };
}

const notices = (requests: Received[]): NoticeBody[] =>
  requests.map((request) => JSON.parse(request.body) as NoticeBody);

describe('notices', () => {
  it('tell another webhook that one is failing, its circuit opened, then that it recovered', async ({
    db,
    pipeline,
    receiver,
    told,
  }) => {
    const endpoint = outage(receiver);
    const env = inEnvironment('notices-env');
    const failing = await pipeline.addWebhook(
      // Subscribed to notices too: still never told about itself.
      webhookInput(receiver.url, {
        name: 'search indexer',
        events: [...itemEventsIn(env.environment), ...ALL_NOTICES],
      }),
    );
    await pipeline.emit([env.event(), env.event()]);

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

    endpoint.recover();
    await waitFor(
      () => expect(notices(told.requests).map((n) => n.event_type)).toContain('recovered'),
      { timeout: 10_000, interval: 50 },
    );
    // Each change told once.
    const kinds = notices(told.requests).map((n) => n.event_type);
    expect(kinds.filter((k) => k === 'failing')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'recovered')).toHaveLength(1);
  });

  it('tell a webhook disabled by a 410, with its reason, and a bulk job that ended', async ({
    db,
    pipeline,
    receiver,
    told,
  }) => {
    receiver.respond = (_req, res) => res.writeHead(410).end();
    const env = inEnvironment('notices-gone-env');
    const gone = await pipeline.addWebhook(env.webhook(receiver.url, { name: 'retired' }));
    await pipeline.emit([env.event()]);
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
  });
});
