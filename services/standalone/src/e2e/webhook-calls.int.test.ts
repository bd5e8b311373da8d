import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { resendJobId } from '@herald/contract';
import { createApp } from '@herald/ingest';
import { serveTestApi } from '@herald/testkit/fixtures';
import { findWebhookCall, type WebhookInput, type WebhookRecord } from '@herald/store';
import {
  randomId,
  startReceiver,
  testDeps,
  type Receiver,
  type TestApi,
  waitFor,
} from '@herald/testkit';
import { itemEvent, itemEventsIn, pipelineTest, webhookInput } from '@herald/delivery/testing';
import type { Pipeline } from '@herald/delivery/testing';

// The /webhook_calls API of services/ingest (docs/api.md, Webhook calls) against calls made by real
// deliveries: the ingest app on the pipeline's Redis prefix, enqueuing where its match worker takes
// jobs.
const it = pipelineTest({
  retry: { scheduleMs: [60_000], jitter: 0.1, retryAfterMaxMs: 86_400_000 },
})
  .extend('api', { scope: 'file' }, ({ db, pipeline }, { onCleanup }) =>
    serveTestApi(
      createApp,
      { ...testDeps(db, pipeline.coordination), enqueueTimeoutMs: 1000 },
      onCleanup,
    ),
  )
  // The test's own endpoint, closed after it: it answers `own.status`, its body saying which.
  // vitest reads what a fixture needs from its destructuring: this one needs nothing.
  // eslint-disable-next-line no-empty-pattern
  .extend('own', async ({}, { onCleanup }) => {
    const own: Receiver & { status: number } = Object.assign(await startReceiver(), {
      status: 200,
    });
    own.respond = (_req, res) => res.writeHead(own.status).end(`answer ${own.status}`);
    onCleanup(() => own.close());
    return own;
  });

/** A webhook of its own environment, taking the item publishes there, with `overrides`. */
async function publishWebhook(
  pipeline: Pipeline,
  url: string,
  overrides: Partial<WebhookInput> = {},
): Promise<{ env: string; hook: WebhookRecord }> {
  const env = randomId('env');
  const events = itemEventsIn(env, ['publish']);
  const hook = await pipeline.addWebhook(webhookInput(url, { events, ...overrides }));
  return { env, hook };
}

/** Each path answers `status` with `code` in the error envelope. */
async function expectRefused(
  api: TestApi,
  paths: readonly string[],
  status: number,
  code: string,
): Promise<void> {
  for (const path of paths) {
    const response = await api.call('GET', path);
    expect(response.status, path).toBe(status);
    expect(JSON.stringify(response.body), path).toContain(code);
  }
}

let failing = true;
it.beforeAll(({ api: _api, receiver }) => {
  receiver.respond = (_req, res) => res.writeHead(failing ? 503 : 200).end();
});

describe('/webhook_calls', () => {
  it('lists with filters, order and paging, retrieves, and resends', async ({
    api,
    pipeline,
    receiver,
  }) => {
    const env = randomId('env');
    const events = itemEventsIn(env, ['update', 'publish']);
    const a = await pipeline.addWebhook(
      webhookInput(receiver.url, { events, httpBasicUser: 'u', httpBasicPassword: 'secret-pass' }),
    );
    const b = await pipeline.addWebhook(webhookInput(receiver.url, { events }));
    const update = itemEvent({ environment: env, eventType: 'update' });
    const publish = itemEvent({ environment: env, eventType: 'publish' });
    await pipeline.emit([update]);
    await pipeline.waitForCall(update.id, a.id, ['rescheduled']);
    await pipeline.waitForCall(update.id, b.id, ['rescheduled']);
    await pipeline.emit([publish]);
    const rescheduled = await pipeline.waitForCall(publish.id, a.id, ['rescheduled']);
    await pipeline.waitForCall(publish.id, b.id, ['rescheduled']);

    const all = await api.call('GET', '/webhook_calls?page[limit]=2&order_by=created_at_desc');
    expect(all.status).toBe(200);
    expect((all.body['meta'] as { total_count: number }).total_count).toBe(4);
    const page = all.body['data'] as { id: string; attributes: Record<string, unknown> }[];
    expect(page).toHaveLength(2);
    expect(page[0]!.attributes['event_type']).toBe('publish');

    const byWebhook = await api.call(
      'GET',
      `/webhook_calls?filter[fields][webhook_id][eq]=${a.id}&filter[fields][event_type][eq]=publish`,
    );
    const only = byWebhook.body['data'] as {
      id: string;
      attributes: Record<string, unknown>;
      relationships: unknown;
    }[];
    expect(only.map((c) => c.id)).toEqual([rescheduled.id]);
    expect(only[0]!.relationships).toEqual({ webhook: { data: { type: 'webhook', id: a.id } } });
    expect(only[0]!.attributes['status']).toBe('rescheduled');
    expect(only[0]!.attributes['response_status']).toBe(503);
    expect(
      (only[0]!.attributes['request_headers'] as Record<string, string>)['Authorization'],
    ).toBe('Basic ***');
    expect(JSON.stringify(only[0])).not.toContain('secret-pass');

    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = await api.call('GET', `/webhook_calls?filter[fields][created_at][gt]=${future}`);
    expect((none.body['meta'] as { total_count: number }).total_count).toBe(0);
    const ids = await api.call(
      'GET',
      `/webhook_calls?filter[ids]=${rescheduled.id}&filter[fields][status][eq]=rescheduled`,
    );
    expect((ids.body['data'] as unknown[]).length).toBe(1);

    // Dates and date-times in ISO-8601, without a zone meaning UTC.
    for (const since of ['2000-01-01', '2000-01-01T00:00:00', '2000-01-01T02:00%2B02:00']) {
      const all = await api.call('GET', `/webhook_calls?filter[fields][created_at][gt]=${since}`);
      expect(all.status, since).toBe(200);
      expect((all.body['meta'] as { total_count: number }).total_count).toBeGreaterThan(0);
    }
    for (const bad of [
      'page[limit]=501',
      'order_by=name_asc',
      'filter[fields][status][eq]=nope',
      'filter[fields][created_at][gt]=yesterday',
      'filter[fields][url][eq]=x',
      // Date.parse took these; Postgres refused the first two (a 500), the rest meant a guess.
      'filter[fields][created_at][gt]=-271821-04-20',
      'filter[fields][created_at][lt]=0000-12-31T23:00:00Z',
      'filter[fields][last_sent_at][gt]=1',
      'filter[fields][next_retry_at][lt]=March 7',
      'filter[fields][created_at][gt]=2023-02-29',
      // Not decimal integers: a blank, hex, an exponent, a sign.
      'page[offset]=',
      'page[offset]=0x10',
      'page[limit]=1e1',
      'page[offset]=+1',
    ]) {
      const response = await api.call('GET', `/webhook_calls?${bad}`);
      expect(response.status, bad).toBe(422);
      expect(JSON.stringify(response.body)).toContain('INVALID_PARAMS');
    }

    const one = await api.call('GET', `/webhook_calls/${rescheduled.id}`);
    expect(one.status).toBe(200);
    expect((one.body['data'] as { id: string }).id).toBe(rescheduled.id);
    expect((await api.call('GET', '/webhook_calls/999999')).status).toBe(404);
    expect((await api.call('GET', '/webhook_calls/nope')).status).toBe(404);

    // Resend: sent again now with the same webhook-id; the success ends the planned retry.
    failing = false;
    const before = receiver.requests.length;
    const resend = await api.fetch(`/webhook_calls/${rescheduled.id}/resend_webhook`, {
      method: 'POST',
    });
    expect(resend.status).toBe(204);
    expect(await resend.text()).toBe('');
    const done = await pipeline.waitForCall(publish.id, a.id, ['success']);
    expect(done.nextRetryAt).toBeNull();
    const resent = receiver.requests.slice(before);
    expect(resent).toHaveLength(1);
    expect(resent[0]!.headers['webhook-id']).toBe(rescheduled.id);
    await waitFor(async () => {
      expect(
        (await api.call('GET', `/webhook_calls/${rescheduled.id}`)).body['data'],
      ).toMatchObject({
        attributes: { status: 'success', next_retry_at: null },
      });
    });
    const missing = await api.fetch(`/webhook_calls/424242/resend_webhook`, {
      method: 'POST',
    });
    expect(missing.status).toBe(404);
  });

  it('keeps every attempt of a call, each with the request as sent and its answer', async ({
    api,
    pipeline,
    own,
  }) => {
    own.status = 503;
    const { env, hook } = await publishWebhook(pipeline, own.url, {
      httpBasicUser: 'u',
      httpBasicPassword: 'attempt-secret',
    });
    const event = itemEvent({ environment: env, eventType: 'publish' });
    await pipeline.emit([event]);
    const call = await pipeline.waitForCall(event.id, hook.id, ['rescheduled']);
    // The webhook's payload changes, then a resend sends the new one, and succeeds.
    const updated = await api.call('PUT', `/webhooks/${hook.id}`, {
      data: { type: 'webhook', id: hook.id, attributes: { custom_payload: '{"version":2}' } },
    });
    expect(updated.status).toBe(200);
    own.status = 200;
    const resend = await api.fetch(`/webhook_calls/${call.id}/resend_webhook`, {
      method: 'POST',
    });
    expect(resend.status).toBe(204);
    await pipeline.waitForCall(event.id, hook.id, ['success']);

    const listed = await api.call('GET', `/webhook_calls/${call.id}/attempts`);
    expect(listed.status).toBe(200);
    expect(listed.body['meta']).toEqual({ total_count: 2 });
    const [first, second] = listed.body['data'] as {
      id: string;
      attributes: Record<string, unknown>;
      relationships: unknown;
    }[];
    expect(own.requests).toHaveLength(2);
    /** The call's attempt `number`, with what it was sent for, how it ended, and `attributes`. */
    const attempt = (
      number: number,
      trigger: string,
      outcome: string,
      attributes: Record<string, unknown>,
    ) => ({ id: `${call.id}-${number}`, attributes: { number, trigger, outcome, ...attributes } });
    expect(first).toMatchObject({
      ...attempt(1, 'first', 'rescheduled', {
        request_url: own.url,
        request_payload: own.requests[0]!.body,
        request_headers: { Authorization: 'Basic ***', 'webhook-id': call.id },
        response_status: 503,
        response_payload: 'answer 503',
      }),
      relationships: { webhook_call: { data: { type: 'webhook_call', id: call.id } } },
    });
    expect(second).toMatchObject(
      attempt(2, 'resend', 'success', {
        request_payload: '{"version":2}',
        response_status: 200,
        response_payload: 'answer 200',
        failure_reason: null,
      }),
    );
    expect(own.requests[1]!.body).toBe('{"version":2}');
    for (const attempt of [first!, second!]) {
      expect(typeof attempt.attributes['duration_ms']).toBe('number');
      expect(Date.parse(attempt.attributes['started_at'] as string)).toBeGreaterThan(0);
    }
    expect(JSON.stringify(listed.body)).not.toContain('attempt-secret');
    // The call itself keeps the DatoCMS shape: its last attempt.
    const retrieved = await api.call('GET', `/webhook_calls/${call.id}`);
    expect(retrieved.body['data']).toMatchObject({
      attributes: { status: 'success', request_payload: '{"version":2}', response_status: 200 },
    });

    const paged = await api.call(
      'GET',
      `/webhook_calls/${call.id}/attempts?page[limit]=1&page[offset]=1`,
    );
    expect(paged.body['meta']).toEqual({ total_count: 2 });
    expect((paged.body['data'] as { id: string }[]).map((a) => a.id)).toEqual([`${call.id}-2`]);
    const missing = ['999999', 'nope', '0'].map((id) => `/webhook_calls/${id}/attempts`);
    await expectRefused(api, missing, 404, 'NOT_FOUND');
    const bad = ['page[limit]=0', 'page[limit]=501', 'page[offset]=-1', 'order_by=x'];
    const badPaths = bad.map((query) => `/webhook_calls/${call.id}/attempts?${query}`);
    await expectRefused(api, badPaths, 422, 'INVALID_PARAMS');
  });

  it("reports a webhook's health from its attempts: counts, rate, latency, streak, backlog", async ({
    api,
    pipeline,
    own,
  }) => {
    const { env, hook } = await publishWebhook(pipeline, own.url);
    const idle = await pipeline.addWebhook(webhookInput(own.url, { events: [] }));
    const send = async (status: 'success' | 'rescheduled') => {
      const event = itemEvent({ environment: env, eventType: 'publish' });
      await pipeline.emit([event]);
      await pipeline.waitForCall(event.id, hook.id, [status]);
    };
    for (let i = 0; i < 3; i++) await send('success');
    own.status = 503; // the endpoint goes down: retries are planned a minute later
    for (let i = 0; i < 2; i++) await send('rescheduled');

    // The delivery processes write their stats every quarter second.
    await waitFor(async () => {
      const stats = await api.call('GET', `/webhooks/${hook.id}/stats?window=1h`);
      expect(stats.body['data']).toMatchObject({ attributes: { attempts: { total: 5 } } });
    });
    const one = await api.call('GET', `/webhooks/${hook.id}/stats?window=1h`);
    expect(one.status).toBe(200);
    const data = one.body['data'] as {
      id: string;
      attributes: Record<string, unknown> & {
        buckets: { attempts_success: number; attempts_failure: number }[];
      };
    };
    expect(data).toMatchObject({
      type: 'webhook_stats',
      id: hook.id,
      attributes: {
        window: '1h',
        granularity: 'minute',
        attempts: { total: 5, success: 3, failure: 2 },
        calls: { succeeded: 3, failed: 0 },
        success_rate: 0.6,
        failure_streak: 2,
        backlog: { pending: 0, rescheduled: 2 },
      },
      relationships: { webhook: { data: { type: 'webhook', id: hook.id } } },
    });
    const a = data.attributes;
    expect(typeof (a['latency_ms'] as { p50: unknown }).p50).toBe('number');
    expect(Date.parse(a['last_success_at'] as string)).toBeLessThan(
      Date.parse(a['last_failure_at'] as string),
    );
    expect(
      (a['backlog'] as { oldest_age_seconds: number }).oldest_age_seconds,
    ).toBeGreaterThanOrEqual(0);
    expect(a.buckets.reduce((n, b) => n + b.attempts_success, 0)).toBe(3);
    expect(a.buckets.reduce((n, b) => n + b.attempts_failure, 0)).toBe(2);

    // All webhooks in one call (for the list), without buckets.
    const all = await api.call('GET', '/webhook_stats?window=1h');
    expect(all.status).toBe(200);
    const listed = all.body['data'] as { id: string; attributes: Record<string, unknown> }[];
    const mine = listed.find((s) => s.id === hook.id)!;
    expect(mine.attributes).toMatchObject({ attempts: { total: 5 }, success_rate: 0.6 });
    expect(mine.attributes['buckets']).toBeUndefined();
    expect(listed.find((s) => s.id === idle.id)!.attributes).toMatchObject({
      attempts: { total: 0, success: 0, failure: 0 },
      success_rate: null,
      latency_ms: { p50: null, p95: null, p99: null, mean: null },
      last_success_at: null,
      failure_streak: 0,
    });
    // The default window is 24 hours, read from hour buckets.
    const day = await api.call('GET', `/webhooks/${hook.id}/stats`);
    expect(day.body['data']).toMatchObject({
      attributes: { window: '24h', granularity: 'hour', attempts: { total: 5 } },
    });

    const missing = ['999999', 'nope'].map((id) => `/webhooks/${id}/stats`);
    await expectRefused(api, missing, 404, 'NOT_FOUND');
    const bad = ['window=2h', 'window=', 'from=2020-01-01'].flatMap((query) => [
      `/webhooks/${hook.id}/stats?${query}`,
      `/webhook_stats?${query}`,
    ]);
    await expectRefused(api, bad, 422, 'INVALID_PARAMS');
  });

  it('sends a test now: a sample or a chosen stored event, logged with the trigger test', async ({
    api,
    db,
    pipeline,
    own,
  }) => {
    const { env, hook } = await publishWebhook(pipeline, own.url, { enabled: false });
    const test = async (body?: unknown) => api.call('POST', `/webhooks/${hook.id}/test`, body);
    const settled = (id: string, status: string) =>
      waitFor(
        async () => {
          const call = await findWebhookCall(db, id);
          if (call?.status !== status) throw new Error(`call ${id} is ${call?.status}`);
          return call;
        },
        { timeout: 10_000, interval: 25 },
      );
    const attemptsOf = async (id: string) =>
      (await api.call('GET', `/webhook_calls/${id}/attempts`)).body['data'] as {
        attributes: { trigger: string; outcome: string };
      }[];

    // A sample event, to a webhook still disabled.
    const sample = await test();
    expect(sample.status).toBe(202);
    const sampleCall = sample.body['data'] as { id: string; attributes: Record<string, unknown> };
    expect(sampleCall.attributes).toMatchObject({
      status: 'pending',
      entity_type: 'item',
      event_type: 'publish',
      event_id: 'sample-event',
    });
    await settled(sampleCall.id, 'success');
    expect(own.requests).toHaveLength(1);
    expect(own.requests[0]!.headers['webhook-id']).toBe(sampleCall.id);
    expect(own.requests[0]!.body).toContain('Hello from Herald');
    expect((await attemptsOf(sampleCall.id)).map((a) => a.attributes)).toMatchObject([
      { trigger: 'test', outcome: 'success' },
    ]);

    // A stored event, already delivered: a second call of its own, the first untouched.
    await api.call('PUT', `/webhooks/${hook.id}`, {
      data: { type: 'webhook', id: hook.id, attributes: { enabled: true } },
    });
    const event = itemEvent({ environment: env, eventType: 'publish' });
    await pipeline.emit([event]);
    const delivered = await pipeline.waitForCall(event.id, hook.id, ['success']);
    own.status = 500; // a failing test is failed at once: tests are never retried
    const chosen = await test({
      data: { type: 'webhook_test', attributes: { event_id: event.id } },
    });
    expect(chosen.status).toBe(202);
    const chosenCall = chosen.body['data'] as { id: string; attributes: Record<string, unknown> };
    expect(chosenCall.id).not.toBe(delivered.id);
    expect(chosenCall.attributes['event_id']).toBe(event.id);
    const failed = await settled(chosenCall.id, 'failed');
    expect(failed.nextRetryAt).toBeNull();
    expect(own.requests.map((r) => r.headers['webhook-id'])).toEqual([
      sampleCall.id,
      delivered.id,
      chosenCall.id,
    ]);
    expect(own.requests[2]!.body).toContain(event.entityId);
    expect((await attemptsOf(chosenCall.id)).map((a) => a.attributes)).toMatchObject([
      { trigger: 'test', outcome: 'failed' },
    ]);
    expect((await api.call('GET', `/webhook_calls/${delivered.id}`)).body['data']).toMatchObject({
      attributes: { status: 'success' },
    });

    expect((await api.call('POST', '/webhooks/999999/test')).status).toBe(404);
    for (const [body, code] of [
      [
        { data: { type: 'webhook_test', attributes: { event_id: 'never-sent' } } },
        'VALIDATION_INCLUSION',
      ],
      [{ data: { type: 'webhook', attributes: {} } }, 'INVALID_FORMAT'],
      [{ data: { type: 'webhook_test', attributes: { url: 'http://x' } } }, 'INVALID_ATTRIBUTES'],
      [{ data: [] }, 'INVALID_FORMAT'],
    ] as const) {
      const response = await test(body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(JSON.stringify(response.body)).toContain(code);
    }
  });

  it("stores credential headers and the webhook's redact_headers as ***, sent in clear", async ({
    api,
    pipeline,
    own,
  }) => {
    const { env, hook } = await publishWebhook(pipeline, own.url, {
      headers: {
        'X-Api-Key': 'key-in-clear-123',
        // No scheme: the whole value is the secret.
        Authorization: 'sk_live_456',
        'X-Tenant': 'tenant-789',
        'X-Team': 'content',
      },
      redactHeaders: ['x-tenant'],
    });
    const event = itemEvent({ environment: env, eventType: 'publish' });
    await pipeline.emit([event]);
    const call = await pipeline.waitForCall(event.id, hook.id, ['success']);

    expect(own.requests).toHaveLength(1);
    expect(own.requests[0]!.headers).toMatchObject({
      'x-api-key': 'key-in-clear-123',
      authorization: 'sk_live_456',
      'x-tenant': 'tenant-789',
      'x-team': 'content',
    });
    const logged = {
      'X-Api-Key': '***',
      Authorization: '***',
      'X-Tenant': '***',
      'X-Team': 'content',
      'webhook-id': call.id,
    };
    expect(call.requestHeaders).toMatchObject(logged);
    expect(call.requestHeaders?.['webhook-signature']).toBe(
      own.requests[0]!.headers['webhook-signature'],
    );
    const listed = await api.call(
      'GET',
      `/webhook_calls?filter[fields][webhook_id][eq]=${hook.id}`,
    );
    const retrieved = await api.call('GET', `/webhook_calls/${call.id}`);
    for (const calls of [listed.body, retrieved.body]) {
      expect(JSON.stringify(calls)).toMatch(/"X-Api-Key":"\*\*\*"/);
      expect(JSON.stringify(calls)).not.toMatch(/key-in-clear-123|sk_live_456|tenant-789/);
    }
    expect(retrieved.body['data']).toMatchObject({ attributes: { request_headers: logged } });
  });

  it('stores credential query values as ***, sent in clear, and includes the webhook without its secrets', async ({
    api,
    pipeline,
    own,
  }) => {
    const { env, hook } = await publishWebhook(
      pipeline,
      `${own.url}/hook?token=abc-url-secret&page=2`,
      {
        headers: { 'X-Api-Key': 'key-in-clear-123' },
        httpBasicUser: 'herald',
        httpBasicPassword: 'basic-in-clear-456',
      },
    );
    const event = itemEvent({ environment: env, eventType: 'publish' });
    await pipeline.emit([event]);
    const call = await pipeline.waitForCall(event.id, hook.id, ['success']);

    expect(own.requests).toHaveLength(1);
    expect(own.requests[0]!.url).toBe('/hook?token=abc-url-secret&page=2');
    const basic = Buffer.from('herald:basic-in-clear-456').toString('base64');
    expect(own.requests[0]!.headers['authorization']).toBe(`Basic ${basic}`);
    const logged = `${own.url}/hook?token=***&page=2`;
    expect(call.requestUrl).toBe(logged);

    const listed = await api.call(
      'GET',
      `/webhook_calls?filter[fields][webhook_id][eq]=${hook.id}`,
    );
    const retrieved = await api.call('GET', `/webhook_calls/${call.id}`);
    const attempts = await api.call('GET', `/webhook_calls/${call.id}/attempts`);
    expect(listed.body).toMatchObject({
      data: [{ attributes: { request_url: logged } }],
      included: [{ id: hook.id, attributes: { url: logged } }],
    });
    expect(retrieved.body).toMatchObject({ data: { attributes: { request_url: logged } } });
    expect(attempts.body).toMatchObject({ data: [{ attributes: { request_url: logged } }] });
    const secrets = [
      'abc-url-secret',
      'key-in-clear-123',
      'basic-in-clear-456',
      basic,
      hook.signingSecret.slice('whsec_'.length),
    ];
    for (const answer of [listed.body, retrieved.body, attempts.body]) {
      for (const secret of secrets) expect(JSON.stringify(answer)).not.toContain(secret);
    }
  });

  it("answers 404 NOT_FOUND naming the webhook when the call's webhook was deleted", async ({
    api,
    pipeline,
    receiver,
  }) => {
    failing = false;
    const hook = await pipeline.addWebhook(webhookInput(receiver.url, { autoRetry: false }));
    const event = itemEvent({ eventType: 'publish' });
    await pipeline.emit([event]);
    const call = await pipeline.waitForCall(event.id, hook.id, ['success']);
    const destroyed = await api.fetch(`/webhooks/${hook.id}`, {
      method: 'DELETE',
    });
    expect(destroyed.status).toBe(200);

    const resend = await api.fetch(`/webhook_calls/${call.id}/resend_webhook`, {
      method: 'POST',
    });
    expect(resend.status).toBe(404);
    expect(resend.headers.get('content-type')).toMatch(/application\/json/);
    const body = (await resend.json()) as {
      data: { attributes: { code: string; details: Record<string, unknown> } }[];
    };
    expect(body.data).toHaveLength(1);
    expect(body.data[0]!.attributes.code).toBe('NOT_FOUND');
    expect(body.data[0]!.attributes.details).toMatchObject({ id: call.id, webhook_id: hook.id });
    expect(String(body.data[0]!.attributes.details['message'])).toMatch(/deleted/);
    // Nothing was enqueued: the deliver worker never sees this resend.
    expect(await pipeline.runtime.deliverQueue.getJob(resendJobId(call.id))).toBeUndefined();
    // The call itself is still there to read.
    expect((await api.call('GET', `/webhook_calls/${call.id}`)).status).toBe(200);
  });
});

describe('GET /webhook_calls under arbitrary query strings', () => {
  const key = fc.constantFrom(
    'page[offset]',
    'page[limit]',
    'order_by',
    'filter[ids]',
    'filter[ids][]',
    'filter[fields][webhook_id][eq]',
    'filter[fields][entity_type][eq]',
    'filter[fields][status][eq]',
    'filter[fields][created_at][gt]',
    'filter[fields][last_sent_at][lt]',
    'filter[fields][next_retry_at][gt]',
    'filter[fields][created_at][eq]',
    'filter',
    'page',
  );
  const value = fc.oneof(
    fc.constantFrom(
      '',
      '0',
      '-1',
      '1e3',
      '0x10',
      '99999999999999999999',
      '9007199254740992',
      '2024-01-01',
      '-271821-04-20',
      '275760-09-13',
      '0000-01-01T00:00:00Z',
      '9999-12-31T23:59:59-14:00',
      'created_at_desc',
      'pending',
      '1,2,x',
    ),
    fc.integer().map(String),
    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    fc.string({ unit: 'binary', maxLength: 12 }).map(encodeURIComponent),
  );

  it('answers 200 or a 4xx in the envelope, never a 500', async ({ api }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(key, value).map(([k, v]) => `${k}=${v}`),
          { maxLength: 5 },
        ),
        async (pairs) => {
          const query = pairs.join('&');
          const { status, body } = await api.call('GET', `/webhook_calls?${query}`);
          expect(status, `${query} → ${JSON.stringify(body)}`).toBeLessThan(500);
          if (status !== 200) {
            const [entry] = body['data'] as { type: string }[];
            expect(entry!.type).toBe('api_error');
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
