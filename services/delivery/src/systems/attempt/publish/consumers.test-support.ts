import { randomBytes } from 'node:crypto';
import amqp, { type ChannelModel } from 'amqplib';
import { Redis } from 'ioredis';
import mqtt, { type MqttClient } from 'mqtt';
import {
  AckPolicy,
  connect as natsConnect,
  nanos,
  type ConsumerMessages,
  type NatsConnection,
} from 'nats';
import { vi } from 'vitest';
import type { BrokerDestination } from '@herald/contract';

// The shared brokers of the destination tests (scripts/ensure-services.sh), and a consumer of
// each kind that a test can crash and bring back, reading where it left off: a RabbitMQ queue, a
// JetStream durable consumer, an MQTT persistent session, a Redis stream read from its last id.

export const AMQP_URL = process.env['TEST_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
export const NATS_URL = process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
export const MQTT_URL = process.env['TEST_MQTT_URL'] ?? 'mqtt://127.0.0.1:1883';
export const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export type BrokerKind = BrokerDestination['kind'];
export const BROKER_KINDS: readonly BrokerKind[] = ['rabbitmq', 'nats', 'mqtt', 'redis_stream'];

const unique = (prefix: string) => `herald-test-${prefix}-${randomBytes(6).toString('hex')}`;

/** A message as the consumer took it: the body, and the headers (the signature's among them). */
export interface ConsumedMessage {
  /** The `webhook-id` header: the call's id. */
  id: string;
  body: string;
  headers: Record<string, string>;
}

export interface BrokerConsumer {
  readonly kind: BrokerKind;
  /** The broker's host and port, for a proxy in front of it. */
  readonly upstream: { host: string; port: number };
  /** Where Herald publishes for this consumer: through `url` (a proxy's), or to the broker. */
  destination(url?: string): BrokerDestination;
  /** Every message taken, in the order taken (a redelivery again). */
  readonly received: ConsumedMessage[];
  /** The consumer dies: what it was handed and did not acknowledge goes back to the broker. */
  crash(): Promise<void>;
  /** It comes back, and reads on from where the broker kept its place. */
  resume(): Promise<void>;
  /** Stops it and removes what it made on the broker. */
  close(): Promise<void>;
}

function upstreamOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port) };
}

/** The URL with the broker's credentials (the destination's), at `url`'s host and port. */
function at(url: string | undefined, broker: string): string {
  if (!url) return broker;
  const target = new URL(broker);
  const through = new URL(url);
  target.hostname = through.hostname;
  target.port = through.port;
  return target.toString().replace(/\/$/, '');
}

const noCredentials = { username: null, password: null };

function asText(headers: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [
      name,
      Array.isArray(value) ? String(value[0]) : String(value),
    ]),
  );
}

/** Starts a consumer of `kind` (crash() and resume() then as the test likes). */
export async function startConsumer(kind: BrokerKind): Promise<BrokerConsumer> {
  switch (kind) {
    case 'rabbitmq':
      return rabbitConsumer();
    case 'nats':
      return natsConsumer();
    case 'mqtt':
      return mqttConsumer();
    case 'redis_stream':
      return streamConsumer();
  }
}

/**
 * A direct exchange and a queue bound to it by `routingKey` (unless `bind` is false) on the tests'
 * RabbitMQ, named for this test alone; `close` deletes them.
 */
export async function rabbitQueue(routingKey: string, bind = true) {
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  const exchange = unique('exchange');
  const queue = unique('queue');
  await channel.assertExchange(exchange, 'direct', { durable: false });
  await channel.assertQueue(queue, { durable: false });
  if (bind) await channel.bindQueue(queue, exchange, routingKey);
  return {
    /** The broker's URL, with its credentials. */
    url: AMQP_URL,
    channel,
    exchange,
    queue,
    /** The next message in the queue (taken, acknowledged), once there is one. */
    next: (timeout: number) =>
      vi.waitFor(
        async () => {
          const got = await channel.get(queue, { noAck: true });
          if (!got) throw new Error('no message yet');
          return got;
        },
        { timeout, interval: 25 },
      ),
    async close() {
      await channel.deleteQueue(queue);
      await channel.deleteExchange(exchange);
      await connection.close();
    },
  };
}

async function rabbitConsumer(): Promise<BrokerConsumer> {
  const rabbit = await rabbitQueue('changes');
  const { exchange, queue } = rabbit;
  const received: ConsumedMessage[] = [];
  let connection: ChannelModel | undefined;
  const crash = async () => {
    await connection?.close().catch(() => undefined);
    connection = undefined;
  };
  const consumer: BrokerConsumer = {
    kind: 'rabbitmq',
    upstream: upstreamOf(AMQP_URL),
    destination: (url) => ({
      kind: 'rabbitmq',
      url: at(url, AMQP_URL),
      exchange,
      routing_key: 'changes',
      ...noCredentials,
    }),
    received,
    crash,
    async resume() {
      connection = await amqp.connect(AMQP_URL);
      const consuming = await connection.createChannel();
      await consuming.prefetch(20);
      await consuming.consume(queue, (message) => {
        if (!message) return;
        const headers = asText(message.properties.headers ?? {});
        received.push({
          id: headers['webhook-id'] ?? '',
          body: message.content.toString(),
          headers,
        });
        consuming.ack(message);
      });
    },
    async close() {
      await crash();
      await rabbit.close();
    },
  };
  await consumer.resume();
  return consumer;
}

async function natsConsumer(): Promise<BrokerConsumer> {
  const admin = await natsConnect({ servers: NATS_URL });
  const jsm = await admin.jetstreamManager();
  const subject = unique('subject').replaceAll('-', '.');
  const stream = unique('stream').replaceAll('-', '_');
  await jsm.streams.add({ name: stream, subjects: [subject] });
  // Unacknowledged messages come again after a second (a consumer that died holding them).
  await jsm.consumers.add(stream, {
    durable_name: 'herald_test',
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(1000),
  });
  const received: ConsumedMessage[] = [];
  let connection: NatsConnection | undefined;
  let messages: ConsumerMessages | undefined;
  let reading: Promise<void> | undefined;
  const crash = async () => {
    // The iteration ends only once stopped; what it held unacknowledged comes again.
    messages?.stop();
    await connection?.close();
    await reading;
    connection = undefined;
  };
  const consumer: BrokerConsumer = {
    kind: 'nats',
    upstream: upstreamOf(NATS_URL),
    destination: (url) => ({
      kind: 'nats',
      url: at(url, NATS_URL),
      subject,
      jetstream: true,
      ...noCredentials,
    }),
    received,
    crash,
    async resume() {
      const opened = await natsConnect({ servers: NATS_URL });
      connection = opened;
      const durable = await opened.jetstream().consumers.get(stream, 'herald_test');
      const consuming = await durable.consume({ max_messages: 20 });
      messages = consuming;
      reading = (async () => {
        for await (const message of consuming) {
          const headers: Record<string, string> = {};
          for (const [name, values] of message.headers ?? []) headers[name] = values[0] ?? '';
          received.push({ id: headers['webhook-id'] ?? '', body: message.string(), headers });
          message.ack();
        }
      })().catch(() => undefined);
    },
    async close() {
      await crash();
      await jsm.streams.delete(stream);
      await admin.close();
    },
  };
  await consumer.resume();
  return consumer;
}

async function mqttConsumer(): Promise<BrokerConsumer> {
  const topic = `herald-test/${unique('topic')}`;
  const clientId = unique('subscriber');
  const received: ConsumedMessage[] = [];
  let client: MqttClient | undefined;
  let subscribed = false;
  /** A persistent session (clean false, kept 5 minutes): QoS 1 messages wait while it is away. */
  const open = async (clean: boolean): Promise<MqttClient> => {
    const opened = mqtt.connect(MQTT_URL, {
      protocolVersion: 5,
      clientId,
      clean,
      reconnectPeriod: 0,
      properties: { sessionExpiryInterval: clean ? 0 : 300 },
    });
    // Before the CONNACK: a resumed session's messages may follow it in the same read.
    opened.on('message', (_topic, payload, packet) => {
      const headers = asText(packet.properties?.userProperties ?? {});
      received.push({ id: headers['webhook-id'] ?? '', body: payload.toString(), headers });
    });
    await new Promise<void>((resolve, reject) => {
      opened.once('connect', () => resolve());
      opened.once('error', reject);
    });
    return opened;
  };
  const crash = async () => {
    await client?.endAsync(true);
    client = undefined;
  };
  const consumer: BrokerConsumer = {
    kind: 'mqtt',
    upstream: upstreamOf(MQTT_URL),
    destination: (url) => ({ kind: 'mqtt', url: at(url, MQTT_URL), topic, ...noCredentials }),
    received,
    crash,
    async resume() {
      client = await open(false);
      if (!subscribed) await client.subscribeAsync(topic, { qos: 1 });
      subscribed = true;
    },
    async close() {
      await crash();
      // A clean session ends the persistent one on the broker.
      const ending = await open(true);
      await ending.endAsync();
    },
  };
  await consumer.resume();
  return consumer;
}

async function streamConsumer(): Promise<BrokerConsumer> {
  const stream = unique('stream');
  const received: ConsumedMessage[] = [];
  let last = '0';
  let client: Redis | undefined;
  let reading: Promise<void> | undefined;
  const crash = async () => {
    client?.disconnect();
    await reading;
    client = undefined;
  };
  const consumer: BrokerConsumer = {
    kind: 'redis_stream',
    upstream: upstreamOf(REDIS_URL),
    destination: (url) => ({
      kind: 'redis_stream',
      url: at(url, REDIS_URL),
      stream,
      max_len: 100_000,
      ...noCredentials,
    }),
    received,
    crash,
    resume() {
      const reader = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, retryStrategy: () => null });
      reader.on('error', () => undefined);
      client = reader;
      reading = (async () => {
        for (;;) {
          const read = await reader.xread('BLOCK', 100, 'STREAMS', stream, last);
          for (const [id, flat] of read?.[0]?.[1] ?? []) {
            const fields: Record<string, string> = {};
            for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
            const { body, ...headers } = fields;
            received.push({ id: headers['webhook-id'] ?? '', body: body ?? '', headers });
            last = id;
          }
        }
      })().catch(() => undefined);
      return Promise.resolve();
    },
    async close() {
      await crash();
      const cleaner = new Redis(REDIS_URL);
      await cleaner.del(stream);
      await cleaner.quit();
    },
  };
  await consumer.resume();
  return consumer;
}
