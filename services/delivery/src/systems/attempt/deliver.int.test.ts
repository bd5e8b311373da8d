import { beforeEach, describe, expect, onTestFinished } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { findWebhook, listWebhookCallAttempts, rotateWebhookSecret } from '@herald/store';
import {
  defaultPayloadKeys,
  randomId,
  startReceiver,
  type Receiver,
  waitFor,
} from '@herald/testkit';
import { webhooksChangedChannel } from '@herald/contract';
import {
  COORDINATION_MODES,
  inEnvironment,
  pipelineTest,
  startPipeline,
} from '../../harness.test-support.js';

// File-scoped fixtures are made at the top level: a pipeline (and database) per mode.
const tests = { redis: pipelineTest({}, 'redis'), postgres: pipelineTest({}, 'postgres') };

/** Each test's webhooks listen to an environment of its own. */
let env = inEnvironment('main');
beforeEach(() => {
  env = inEnvironment(randomId('env'));
});

/** A fresh receiver per test keeps request lists apart. */
async function withReceiver(respond?: Receiver['respond']): Promise<Receiver> {
  const r = await startReceiver(respond);
  onTestFinished(() => r.close());
  return r;
}

describe.each(COORDINATION_MODES)('%s', (mode) => {
  const it = tests[mode];

  describe('the request Herald sends (docs/api.md, What a webhook call sends)', () => {
    it('sends the default payload byte for byte, with custom headers, Basic auth and signatures', async ({
      pipeline,
    }) => {
      const r = await withReceiver();
      const webhook = await pipeline.addWebhook(
        env.webhook(`${r.url}/hook`, {
          headers: { 'X-Foo': 'Bar', 'User-Agent': 'custom-agent' },
          httpBasicUser: 'user',
          httpBasicPassword: 'p@ss:word',
        }),
      );
      const event = env.event({ relatedEntities: [{ type: 'field', id: 'f1' }] });
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['success']);

      expect(r.requests).toHaveLength(1);
      const request = r.requests[0]!;
      const entity = event.entity as { id: string };
      const expected = JSON.stringify({
        webhook_call_id: call.id,
        event_triggered_at: '2026-11-21T10:00:00.000Z',
        attempted_auto_retries_count: 0,
        webhook_id: webhook.id,
        site_id: 'site-1',
        environment: env.environment,
        is_environment_primary: true,
        entity_type: 'item',
        event_type: 'update',
        entity: {
          type: 'item',
          id: entity.id,
          attributes: { title: 'Hello "world"' },
          relationships: { item_type: { data: { type: 'item_type', id: 'model-article' } } },
          meta: { status: 'draft' },
        },
        related_entities: [{ type: 'field', id: 'f1' }],
      });
      expect(request.method).toBe('POST');
      expect(request.url).toBe('/hook');
      expect(request.body).toBe(expected);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toBe('custom-agent');
      expect(request.headers['x-foo']).toBe('Bar');
      expect(request.headers['authorization']).toBe(
        `Basic ${Buffer.from('user:p@ss:word').toString('base64')}`,
      );
      expect(request.headers['webhook-id']).toBe(call.id);
      const signed = {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      };
      expect(() => new Webhook(webhook.signingSecret).verify(request.body, signed)).not.toThrow();

      // The log keeps the request with the password redacted and the exact body.
      expect(call.requestPayload).toBe(expected);
      expect(call.requestUrl).toBe(`${r.url}/hook`);
      expect(call.requestHeaders?.['Authorization']).toBe('Basic ***');
      expect(JSON.stringify(call.requestHeaders)).not.toContain('p@ss');
      expect(call.responseStatus).toBe(200);
      expect(call.responsePayload).toBe('ok');
      expect(call.lastSentAt).toBeInstanceOf(Date);
      expect(call.nextRetryAt).toBeNull();
    });

    it('omits previous_entity unless the event carries one, and signs with both secrets during a rotation', async ({
      db,
      pipeline,
    }) => {
      const r = await withReceiver();
      const webhook = await pipeline.addWebhook(env.webhook(r.url));
      const oldSecret = webhook.signingSecret;
      const rotated = (await rotateWebhookSecret(db, webhook.id, 60_000))!;
      const event = env.event({ previousEntity: { type: 'item', id: 'prev' } });
      await pipeline.emit([event]);
      await pipeline.waitForCall(event.id, webhook.id, ['success']);
      const request = r.requests[0]!;
      const body = JSON.parse(request.body) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(defaultPayloadKeys({ previousEntity: true }));
      expect(body['previous_entity']).toEqual({ type: 'item', id: 'prev' });
      const signature = String(request.headers['webhook-signature']);
      expect(signature.split(' ')).toHaveLength(2);
      const headers = {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': signature,
      };
      for (const secret of [oldSecret, rotated.signingSecret]) {
        expect(() => new Webhook(secret).verify(request.body, headers)).not.toThrow();
      }
      expect(() =>
        new Webhook('whsec_' + Buffer.alloc(32, 7).toString('base64')).verify(
          request.body,
          headers,
        ),
      ).toThrow();
    });

    it('renders custom_payload with JSON-string escaping for {{x}}, raw {{{x}}}, and the url', async ({
      pipeline,
    }) => {
      const r = await withReceiver();
      const webhook = await pipeline.addWebhook(
        env.webhook(
          `${r.url}/hooks/{{entity_type}}?event={{event_type}}&id={{#entity}}{{id}}{{/entity}}`,
          {
            customPayload:
              '{"type":"{{event_type}}","title":"{{#entity}}{{#attributes}}{{title}}{{/attributes}}{{/entity}}","raw":{{{entity.attributes}}},"n":{{attempted_auto_retries_count}}}',
          },
        ),
      );
      const event = env.event({
        eventType: 'publish',
        entity: {
          type: 'item',
          id: 'rec 1',
          attributes: { title: 'a "quoted"\\ line\nbreak\u0001' },
          relationships: { item_type: { data: { type: 'item_type', id: 'model-article' } } },
          meta: {},
        },
      });
      await pipeline.emit([event]);
      await pipeline.waitForCall(event.id, webhook.id, ['success']);
      const request = r.requests[0]!;
      expect(request.url).toBe('/hooks/item?event=publish&id=rec%201');
      expect(request.body).toBe(
        '{"type":"publish","title":"a \\"quoted\\"\\\\ line\\nbreak\\u0001","raw":{"title":"a \\"quoted\\"\\\\ line\\nbreak\\u0001"},"n":0}',
      );
      expect(JSON.parse(request.body)).toEqual({
        type: 'publish',
        title: 'a "quoted"\\ line\nbreak\u0001',
        raw: { title: 'a "quoted"\\ line\nbreak\u0001' },
        n: 0,
      });
    });
  });

  describe('outcomes (docs/api.md, What a webhook call sends)', () => {
    it('does not follow a 3xx: one request, a failure with the 3xx status', async ({
      pipeline,
    }) => {
      const r = await withReceiver((req, res) => {
        if (req.url === '/moved') {
          res.writeHead(302, { Location: '/elsewhere' }).end();
        } else res.end('followed');
      });
      const webhook = await pipeline.addWebhook(
        env.webhook(`${r.url}/moved`, { autoRetry: false }),
      );
      const event = env.event();
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['failed']);
      expect(call.responseStatus).toBe(302);
      expect(call.nextRetryAt).toBeNull();
      expect(r.requests.map((q) => q.url)).toEqual(['/moved']);
    });

    it('410 Gone fails the call, disables the webhook, ends its waiting calls and tells every process', async ({
      db,
      pipeline,
    }) => {
      // The first event gets a 429 with a retry an hour away; the second a 410.
      let answered = 0;
      const r = await withReceiver((_req, res) =>
        answered++ === 0
          ? res.writeHead(429, { 'Retry-After': '3600' }).end()
          : res.writeHead(410).end('gone'),
      );
      const webhook = await pipeline.addWebhook(env.webhook(r.url));
      const waiting = env.event();
      await pipeline.emit([waiting]);
      await pipeline.waitForCall(waiting.id, webhook.id, ['rescheduled']);
      const heard: string[] = [];
      const listener = await pipeline.coordination.subscribe(
        webhooksChangedChannel(pipeline.coordination.prefix),
        (text) => heard.push(text),
        () => undefined,
      );
      onTestFinished(() => listener.close());

      const event = env.event();
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['failed']);
      expect(call.responseStatus).toBe(410);
      expect(call.responsePayload).toBe('gone');
      expect(call.nextRetryAt).toBeNull();
      // The disable follows the call's own outcome.
      const disabled = await waitFor(async () => {
        const found = await findWebhook(db, webhook.id);
        if (found?.enabled !== false) throw new Error('not disabled yet');
        return found;
      });
      expect(disabled.disabledReason).toMatch(/410/);
      // Its retry an hour away is over at once, not when it falls due.
      const ended = await pipeline.callOf(waiting.id, webhook.id);
      expect(ended.status).toBe('failed');
      expect(ended.nextRetryAt).toBeNull();
      expect(ended.failureReason).toBe('the webhook was disabled (410 Gone)');
      // Announced on the API's channel: the index drops it now, not at its next reload.
      await waitFor(() =>
        expect(heard.map((text) => JSON.parse(text) as unknown)).toContainEqual({
          id: webhook.id,
          change: 'updated',
        }),
      );
      await waitFor(() => expect(pipeline.runtime.index.has(webhook.id)).toBe(false));
      // And no new call is made for it.
      const after = env.event();
      await pipeline.emit([after]);
      await waitFor(async () => {
        const { rows } = await db.query(
          'SELECT 1 FROM events WHERE id = $1 AND matched_at IS NOT NULL',
          [after.id],
        );
        expect(rows).toHaveLength(1);
      });
      const { rows } = await db.query('SELECT 1 FROM webhook_calls WHERE event_id = $1', [
        after.id,
      ]);
      expect(rows).toHaveLength(0);
    });

    it('429 with Retry-After pushes the next attempt later than the schedule', async ({
      pipeline,
    }) => {
      const r = await withReceiver((_req, res) => res.writeHead(429, { 'Retry-After': '2' }).end());
      const webhook = await pipeline.addWebhook(env.webhook(r.url));
      const event = env.event();
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['rescheduled']);
      expect(call.responseStatus).toBe(429);
      // The shrunk schedule says 150 ms; Retry-After says 2 s.
      expect(call.nextRetryAt!.getTime() - call.lastSentAt!.getTime()).toBeGreaterThanOrEqual(1900);
      expect(r.requests).toHaveLength(1);
    });

    it('a hang past the timeout is a failure with a timeout reason', async ({ pipeline }) => {
      const r = await withReceiver(() => undefined); // never answers
      const webhook = await pipeline.addWebhook(env.webhook(r.url, { autoRetry: false }));
      const event = env.event();
      const started = Date.now();
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['failed']);
      expect(call.failureReason).toMatch(/timeout/);
      expect(call.responseStatus).toBeNull();
      expect(Date.now() - started).toBeGreaterThanOrEqual(pipeline.settings.timeoutMs - 50);
    });

    it('a connection reset is a failure with a reset reason', async ({ pipeline }) => {
      const r = await withReceiver((req, res) => res.socket?.destroy());
      const webhook = await pipeline.addWebhook(env.webhook(r.url, { autoRetry: false }));
      const event = env.event();
      await pipeline.emit([event]);
      const call = await pipeline.waitForCall(event.id, webhook.id, ['failed']);
      expect(call.failureReason).toMatch(/reset|closed/);
      expect(r.requests).toHaveLength(1);
    });

    it('retries on the (shrunk) schedule with jitter, counting attempts, then fails', async ({
      db,
      pipeline,
    }) => {
      const r = await withReceiver((_req, res) => res.writeHead(500).end('boom'));
      const webhook = await pipeline.addWebhook(env.webhook(r.url));
      const event = env.event();
      await pipeline.emit([event]);
      const seen: number[] = [];
      await waitFor(
        async () => {
          const call = await pipeline.waitForCall(event.id, webhook.id, ['rescheduled', 'failed']);
          if (!seen.includes(call.attemptedAutoRetriesCount))
            seen.push(call.attemptedAutoRetriesCount);
          if (call.status !== 'failed') throw new Error('still retrying');
        },
        { timeout: 10_000, interval: 20 },
      );
      const call = await pipeline.waitForCall(event.id, webhook.id, ['failed']);
      expect(call.attemptedAutoRetriesCount).toBe(3);
      expect(call.nextRetryAt).toBeNull();
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(r.requests).toHaveLength(4);
      const counts = r.requests.map(
        (q) =>
          (JSON.parse(q.body) as { attempted_auto_retries_count: number })
            .attempted_auto_retries_count,
      );
      expect(counts).toEqual([0, 1, 2, 3]);
      // Same webhook-id on every attempt; gaps follow 150/300/450 ms within the jitter.
      expect(new Set(r.requests.map((q) => q.headers['webhook-id']))).toEqual(new Set([call.id]));
      const gaps = r.requests.slice(1).map((q, i) => q.at - r.requests[i]!.at);
      pipeline.settings.retry.scheduleMs.forEach((ms, i) => {
        expect(gaps[i]).toBeGreaterThanOrEqual(ms * 0.9 - 5);
      });

      // Every attempt is kept, each with the request as sent (the body carries the retry count,
      // so each differs) and its answer.
      const history = await listWebhookCallAttempts(db, call.id, { offset: 0, limit: 10 });
      expect(history?.totalCount).toBe(4);
      const attempts = history!.attempts;
      expect(attempts.map((a) => [a.number, a.trigger, a.outcome])).toEqual([
        [1, 'first', 'rescheduled'],
        [2, 'retry', 'rescheduled'],
        [3, 'retry', 'rescheduled'],
        [4, 'retry', 'failed'],
      ]);
      attempts.forEach((attempt, i) => {
        expect(attempt.requestPayload).toBe(r.requests[i]!.body);
        expect(attempt.requestHeaders['webhook-id']).toBe(call.id);
        expect(attempt).toMatchObject({ responseStatus: 500, responsePayload: 'boom' });
        expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
        expect(Math.abs(attempt.startedAt.getTime() - r.requests[i]!.at)).toBeLessThan(1000);
      });
      // The last attempt's body is stored once, on the call; the others kept their own.
      const { rows } = await db.query<{ number: number; own: boolean }>(
        `SELECT number, request_payload IS NOT NULL AS own FROM webhook_call_attempts
       WHERE call_id = $1 ORDER BY number`,
        [call.id],
      );
      expect(rows.map((row) => row.own)).toEqual([true, true, true, false]);
    });
  });

  describe('fairness (docs/api.md, What a webhook call sends)', () => {
    it('a slow endpoint does not delay a fast one', async ({ db }) => {
      // A pipeline of its own with a long timeout: the slow endpoint's calls hang until the test
      // releases them, so what is asserted is an order of events, not a duration.
      const own = await startPipeline(db, { timeoutMs: 60_000 }, { mode });
      onTestFinished(() => own.close());
      const held: (() => void)[] = [];
      const slow = await withReceiver((_req, res) => held.push(() => res.end('late')));
      const fast = await withReceiver();
      const slowHook = await own.addWebhook(env.webhook(slow.url, { autoRetry: false }));
      await own.addWebhook(env.webhook(fast.url, { autoRetry: false }));
      // Both webhooks match every item event; the slow one's calls come first in each event.
      const events = Array.from({ length: 60 }, () => env.event());
      await own.emit(events);
      await waitFor(
        () => {
          if (fast.requests.length < events.length) throw new Error('fast not done');
        },
        { timeout: 30_000, interval: 20 },
      );
      // Without the per-webhook limit, the hanging calls would take every worker of the pool and
      // the fast endpoint would wait for them; with it, the slow endpoint never holds more than
      // its share while the fast one receives everything.
      expect(slow.requests.length).toBeLessThanOrEqual(own.settings.maxInFlightPerWebhook);
      expect(slow.requests.length).toBeGreaterThan(0);
      // Released, the slow endpoint's calls all complete too.
      const release = setInterval(() => held.splice(0).forEach((answer) => answer()), 20);
      onTestFinished(() => clearInterval(release));
      await waitFor(
        async () => {
          for (const e of events) await own.waitForCall(e.id, slowHook.id, ['success'], 100);
        },
        { timeout: 30_000, interval: 200 },
      );
    }, 90_000); // a pipeline's start and two waits of up to 30 s
  });
});
