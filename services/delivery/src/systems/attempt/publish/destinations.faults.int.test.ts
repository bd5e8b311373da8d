import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { expect, onTestFinished, vi } from 'vitest';
import {
  brokerWebhook,
  emitEvents,
  itemEvent,
  pipelineTest,
  waitForCall,
} from '../../../harness.test-support.js';

// A consumer that stops taking messages: a RabbitMQ queue that refuses new messages once full
// (x-overflow reject-publish), so the broker nacks publishes until the consumer drains it.
const AMQP_URL = process.env['TEST_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';

// Retries often enough, and a circuit that does not hold them back, for the faults to pass.
const it = pipelineTest(
  {
    retry: { scheduleMs: Array<number>(20).fill(100), jitter: 0.1, retryAfterMaxMs: 1000 },
    circuit: { failures: 1_000_000, cooldownMs: 100 },
  },
  'redis',
);
const unique = (prefix: string) => `herald-test-${prefix}-${randomBytes(6).toString('hex')}`;

it('a full queue is a readable failure; once the consumer drains it, every event arrives', async ({
  db,
  pipeline,
}) => {
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  const exchange = unique('exchange');
  const queue = unique('queue');
  await channel.assertExchange(exchange, 'direct', { durable: false });
  await channel.assertQueue(queue, {
    durable: false,
    arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' },
  });
  await channel.bindQueue(queue, exchange, 'k');
  onTestFinished(async () => {
    await channel.deleteQueue(queue);
    await channel.deleteExchange(exchange);
    await connection.close();
  });

  const { webhook, environment: env } = await brokerWebhook(db, pipeline, {
    kind: 'rabbitmq',
    url: AMQP_URL,
    exchange,
    routing_key: 'k',
    username: null,
    password: null,
  });
  const verifier = new Webhook(webhook.signingSecret);

  // Random events; the consumer takes a message only now and then (when a random draw says so).
  const count = fc.sample(fc.integer({ min: 3, max: 8 }), 1)[0]!;
  const events = Array.from({ length: count }, () => itemEvent({ environment: env }));
  await emitEvents(db, pipeline, events);
  // The first message fills the queue; the others are nacked, whichever they are.
  const failureReason = await vi.waitFor(
    async () => {
      const { rows } = await db.query<{ failure_reason: string }>(
        `SELECT failure_reason FROM webhook_calls WHERE webhook_id = $1 AND status = 'rescheduled'`,
        [webhook.id],
      );
      if (!rows[0]) throw new Error('no call rescheduled yet');
      return rows[0].failure_reason;
    },
    { timeout: 5000, interval: 25 },
  );
  expect(failureReason).toMatch(/did not take it \(nack\): a queue it routes to is full/);

  const received = new Set<string>();
  await vi.waitFor(
    async () => {
      if (Math.random() < 0.7) {
        const message = await channel.get(queue, { noAck: true });
        if (message) {
          const headers = Object.fromEntries(
            Object.entries(message.properties.headers ?? {}).map(([k, v]) => [k, String(v)]),
          );
          const payload = verifier.verify(message.content.toString(), headers) as {
            webhook_call_id: string;
          };
          received.add(payload.webhook_call_id);
        }
      }
      if (received.size < count) throw new Error(`${received.size} of ${count} received`);
    },
    { timeout: 20_000, interval: 20 },
  );
  for (const event of events) await waitForCall(db, event.id, webhook.id, ['success']);
});
