import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import mqtt from 'mqtt';
import { connect as natsConnect, type NatsConnection } from 'nats';
import { Webhook } from 'standardwebhooks';
import { describe, expect, onTestFinished, vi } from 'vitest';
import type { BrokerDestination, Destination } from '@herald/contract';
import { listWebhookCallAttempts, type WebhookRecord } from '@herald/store';
import { pipelineTest, rabbitQueue, sendToDestination } from '../../../harness.test-support.js';
import { AMQP_URL, MQTT_URL, NATS_URL, REDIS_URL } from './consumers.test-support.js';

// Real brokers (scripts/ensure-services.sh): each test makes its own exchange, queue, stream,
// topic or key, and removes it.

const it = pipelineTest({}, 'redis');
const unique = (prefix: string) => `herald-test-${prefix}-${randomBytes(6).toString('hex')}`;

const broker = (destination: BrokerDestination): Destination => destination;
const credentials = { username: null, password: null };

/** What the consumer verifies, as an HTTP receiver does. */
function verify(webhook: WebhookRecord, body: string, headers: Record<string, unknown>): unknown {
  const asText = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));
  return new Webhook(webhook.signingSecret).verify(body, asText);
}

describe('rabbitmq', () => {
  /** rabbitQueue, deleted after the test. */
  async function rabbitTopology(routingKey: string, bind = true) {
    const rabbit = await rabbitQueue(routingKey, bind);
    onTestFinished(() => rabbit.close());
    return rabbit;
  }

  it('publishes a signed message that a consumer verifies; the call log says where', async ({
    db,
    pipeline,
  }) => {
    const rabbit = await rabbitTopology('changes');
    const { exchange } = rabbit;
    const { webhook, call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'rabbitmq', url: AMQP_URL, exchange, routing_key: 'changes', ...credentials }),
      ['success'],
    );

    const message = await rabbit.next(5000);
    const body = message.content.toString();
    const headers = message.properties.headers as Record<string, unknown>;
    expect(headers['webhook-id']).toBe(call.id);
    expect(verify(webhook, body, headers)).toMatchObject({ webhook_call_id: call.id });
    expect(message.properties.messageId).toBe(call.id);

    const logged = await listWebhookCallAttempts(db, call.id, { offset: 0, limit: 10 });
    const attempt = logged!.attempts[0]!;
    expect(attempt.requestUrl).toContain(`exchange=${exchange} routing_key=changes`);
    expect(attempt.requestUrl).not.toContain('guest:guest');
    expect(attempt.responseStatus).toBe(200);
    expect(attempt.responsePayload).toContain('confirmed by RabbitMQ');
    expect(attempt.requestHeaders['webhook-signature']).toBeDefined();
  });

  it('a missing exchange is a failure that says so, retried', async ({ db, pipeline }) => {
    const exchange = unique('missing');
    const { call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'rabbitmq', url: AMQP_URL, exchange, routing_key: 'x', ...credentials }),
      ['failed'],
      { timeout: 15_000 },
    );
    expect(call.attemptedAutoRetriesCount).toBe(3);
    expect(call.failureReason).toMatch(/exchange does not exist/);
  });

  it('refused credentials are a failure that says so, the password never logged', async ({
    db,
    pipeline,
  }) => {
    const { exchange } = await rabbitTopology('x');
    const { call } = await sendToDestination(
      db,
      pipeline,
      broker({
        kind: 'rabbitmq',
        url: 'amqp://127.0.0.1:5672',
        exchange,
        routing_key: 'x',
        username: 'guest',
        password: 'not-the-password',
      }),
      ['rescheduled', 'failed'],
    );
    expect(call.failureReason).toMatch(/refused the credentials/);
    const logged = await listWebhookCallAttempts(db, call.id, { offset: 0, limit: 10 });
    expect(JSON.stringify(logged)).not.toContain('not-the-password');
  });

  it('a message no queue takes is not reported as delivered', async ({ db, pipeline }) => {
    const { exchange } = await rabbitTopology('bound');
    const { call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'rabbitmq', url: AMQP_URL, exchange, routing_key: 'unbound', ...credentials }),
      ['rescheduled', 'failed'],
    );
    expect(call.failureReason).toMatch(/no queue is bound/);
  });
});

describe('nats', () => {
  async function natsStream(subject: string): Promise<{ nc: NatsConnection; stream: string }> {
    const nc = await natsConnect({ servers: NATS_URL });
    const jsm = await nc.jetstreamManager();
    const stream = unique('stream').replaceAll('-', '_');
    await jsm.streams.add({ name: stream, subjects: [subject] });
    onTestFinished(async () => {
      await jsm.streams.delete(stream);
      await nc.close();
    });
    return { nc, stream };
  }

  it('publishes to JetStream with an ack; a consumer verifies the message', async ({
    db,
    pipeline,
  }) => {
    const subject = unique('subject').replaceAll('-', '.');
    const { nc, stream } = await natsStream(subject);
    const { webhook, call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'nats', url: NATS_URL, subject, jetstream: true, ...credentials }),
      ['success'],
    );

    const consumer = await nc.jetstream().consumers.get(stream);
    const message = await consumer.next({ expires: 5000 });
    expect(message).not.toBeNull();
    const headers: Record<string, string> = {};
    for (const [name, values] of message!.headers!) headers[name] = values[0] ?? '';
    expect(verify(webhook, message!.string(), headers)).toMatchObject({ webhook_call_id: call.id });
    message!.ack();

    const logged = await listWebhookCallAttempts(db, call.id, { offset: 0, limit: 10 });
    expect(logged!.attempts[0]!.responsePayload).toMatch(
      new RegExp(`stream "${stream}" sequence 1`),
    );
  });

  it('a subject no stream captures is a failure that says so', async ({ db, pipeline }) => {
    const subject = unique('nostream').replaceAll('-', '.');
    const { call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'nats', url: NATS_URL, subject, jetstream: true, ...credentials }),
      ['rescheduled', 'failed'],
    );
    expect(call.failureReason).toMatch(/no JetStream stream/);
  });
});

describe('mqtt', () => {
  it('publishes with QoS 1; a subscriber verifies the message from its user properties', async ({
    db,
    pipeline,
  }) => {
    const topic = `herald-test/${unique('topic')}`;
    const subscriber = await mqtt.connectAsync(MQTT_URL, { protocolVersion: 5 });
    onTestFinished(() => subscriber.endAsync());
    const received: { body: string; headers: Record<string, unknown> }[] = [];
    subscriber.on('message', (_topic, payload, packet) => {
      received.push({
        body: payload.toString(),
        headers: packet.properties?.userProperties ?? {},
      });
    });
    await subscriber.subscribeAsync(topic, { qos: 1 });
    const { webhook, call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'mqtt', url: MQTT_URL, topic, ...credentials }),
      ['success'],
    );
    await vi.waitFor(() => expect(received).toHaveLength(1));
    const [message] = received;
    expect(verify(webhook, message!.body, message!.headers)).toMatchObject({
      webhook_call_id: call.id,
    });
  });

  it('an unreachable broker is a failure that says so', async ({ db, pipeline }) => {
    const { call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'mqtt', url: 'mqtt://127.0.0.1:1', topic: 'nowhere', ...credentials }),
      ['rescheduled', 'failed'],
    );
    expect(call.failureReason).toMatch(/unreachable/);
  });
});

describe('redis_stream', () => {
  /** A stream name of the test's own, and a client that reads it; both gone after the test. */
  const ownStream = (prefix: string) => {
    const stream = unique(prefix);
    const reader = new Redis(REDIS_URL);
    onTestFinished(async () => {
      await reader.del(stream);
      await reader.quit();
    });
    return { stream, reader };
  };

  it('adds a signed entry that a consumer verifies', async ({ db, pipeline }) => {
    const { stream, reader } = ownStream('stream');
    const { webhook, call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'redis_stream', url: REDIS_URL, stream, max_len: 100, ...credentials }),
      ['success'],
    );
    const entries = await reader.xrange(stream, '-', '+');
    expect(entries).toHaveLength(1);
    const [, flat] = entries[0]!;
    const fields: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    const { body, ...headers } = fields;
    expect(verify(webhook, body!, headers)).toMatchObject({ webhook_call_id: call.id });
  });

  it('a key that is not a stream is a failure that says so', async ({ db, pipeline }) => {
    const { stream, reader } = ownStream('not-a-stream');
    await reader.set(stream, 'a string');
    const { call } = await sendToDestination(
      db,
      pipeline,
      broker({ kind: 'redis_stream', url: REDIS_URL, stream, max_len: 100, ...credentials }),
      ['rescheduled', 'failed'],
    );
    expect(call.failureReason).toMatch(/holds something other than a stream/);
  });
});
