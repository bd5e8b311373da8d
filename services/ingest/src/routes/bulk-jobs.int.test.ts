import { describe, expect } from 'vitest';
import { insertWebhook } from '@herald/store';
import { testWebhookInput, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// POST/GET /bulk_jobs and the cancel action (docs/api.md, Bulk jobs). No delivery process runs
// here: jobs stay queued; running them is delivery's (bulk-jobs.int.test.ts, resilience).
const it = appTest(createApp);

const create = (api: TestApi, attributes: unknown) =>
  api.call('POST', '/bulk_jobs', { data: { type: 'bulk_job', attributes } });

describe('POST /bulk_jobs', () => {
  it('queues a bulk resend and a replay, and answers them as bulk_job resources', async ({
    api,
    db,
  }) => {
    const webhook = await insertWebhook(db, testWebhookInput({ name: 'bulk-target' }));
    const resend = await create(api, {
      kind: 'bulk_resend',
      filter: {
        webhook_id: webhook.id,
        status: 'failed',
        created_at: { gt: '2026-11-01', lt: '2026-11-02T12:00:00+01:00' },
        entity_id: 'rec-1',
      },
      rate_per_second: 25,
    });
    expect(resend.status).toBe(202);
    expect(resend.body.data).toMatchObject({
      type: 'bulk_job',
      id: expect.stringMatching(/^[1-9]\d*$/),
      attributes: {
        kind: 'bulk_resend',
        state: 'queued',
        filter: {
          webhook_id: webhook.id,
          status: 'failed',
          // Stored as UTC instants.
          created_at: { gt: '2026-11-01T00:00:00.000Z', lt: '2026-11-02T11:00:00.000Z' },
          entity_id: 'rec-1',
        },
        rate_per_second: 25,
        matched: null,
        done: 0,
        progress: null,
        finished_at: null,
      },
      relationships: { webhook: { data: { type: 'webhook', id: webhook.id } } },
    });
    const replay = await create(api, {
      kind: 'replay',
      webhook_id: webhook.id,
      filter: { occurred_at: { gt: '2026-11-01T00:00:00Z' } },
    });
    expect(replay.status).toBe(202);
    expect(replay.body.data.attributes).toMatchObject({
      kind: 'replay',
      rate_per_second: null,
      filter: { occurred_at: { gt: '2026-11-01T00:00:00.000Z' } },
    });

    const got = await api.call('GET', `/bulk_jobs/${resend.body.data.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(resend.body.data);
    const list = await api.call('GET', `/bulk_jobs?filter[webhook_id]=${webhook.id}`);
    expect(list.body.meta).toEqual({ total_count: 2 });
    expect(list.body.data.map((job: { id: string }) => job.id)).toEqual([
      replay.body.data.id,
      resend.body.data.id,
    ]);
  });

  it('refuses what it cannot run, naming each field', async ({ api, db }) => {
    const disabled = await insertWebhook(
      db,
      testWebhookInput({ name: 'bulk-disabled', enabled: false }),
    );
    const cases: [unknown, string][] = [
      [{ kind: 'sweep' }, 'kind'],
      [{ kind: 'replay' }, 'webhook_id'],
      [{ kind: 'replay', webhook_id: '999999' }, 'webhook_id'],
      [{ kind: 'replay', webhook_id: disabled.id }, 'webhook_id'],
      [{ kind: 'bulk_resend', filter: { webhook_id: '1x' } }, 'filter.webhook_id'],
      [{ kind: 'bulk_resend', filter: { status: 'lost' } }, 'filter.status'],
      [
        { kind: 'bulk_resend', filter: { created_at: { gt: 'yesterday' } } },
        'filter.created_at.gt',
      ],
      [
        { kind: 'bulk_resend', filter: { created_at: { gt: '2026-11-02', lt: '2026-11-01' } } },
        'filter.created_at',
      ],
      [{ kind: 'bulk_resend', filter: { colour: 'red' } }, 'filter'],
      [{ kind: 'bulk_resend', rate_per_second: 0 }, 'rate_per_second'],
      [{ kind: 'bulk_resend', rate_per_second: '5' }, 'rate_per_second'],
      [{ kind: 'bulk_resend', extra: true }, 'extra'],
    ];
    for (const [attributes, field] of cases) {
      const answer = await create(api, attributes);
      expect(answer.status, JSON.stringify(attributes)).toBe(422);
      expect(answer.body.data[0].attributes.code).toBe(
        field === 'extra' ? 'INVALID_ATTRIBUTES' : 'INVALID_FIELD',
      );
      expect(answer.body.data[0].attributes.details.field, JSON.stringify(attributes)).toBe(field);
    }
    for (const body of [null, [], { data: { type: 'webhook', attributes: {} } }]) {
      const answer = await api.call('POST', '/bulk_jobs', body);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
    }
  });
});

describe('GET /bulk_jobs/:id and cancel', () => {
  it('cancels a job once, answers a finished one as it is, and 404s unknown ids', async ({
    api,
  }) => {
    const job = await create(api, { kind: 'bulk_resend', filter: { status: 'failed' } });
    const cancelled = await api.call('POST', `/bulk_jobs/${job.body.data.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.attributes).toMatchObject({
      state: 'cancelled',
      finished_at: expect.any(String),
    });
    const again = await api.call('POST', `/bulk_jobs/${job.body.data.id}/cancel`);
    expect(again.body.data.attributes.finished_at).toBe(cancelled.body.data.attributes.finished_at);
    for (const id of ['999999', 'abc', '0', '1'.repeat(30)]) {
      for (const [method, path] of [
        ['GET', `/bulk_jobs/${id}`],
        ['POST', `/bulk_jobs/${id}/cancel`],
      ] as const) {
        const answer = await api.call(method, path);
        expect(answer.status).toBe(404);
        expect(answer.body.data[0].attributes.code).toBe('NOT_FOUND');
      }
    }
    const bad = await api.call('GET', '/bulk_jobs?page[limit]=0');
    expect(bad.status).toBe(422);
    expect(bad.body.data[0].attributes.code).toBe('INVALID_PARAMS');
  });
});
