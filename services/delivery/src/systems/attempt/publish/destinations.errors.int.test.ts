import { randomBytes } from 'node:crypto';
import { connect as natsConnect } from 'nats';
import { describe, expect, onTestFinished } from 'vitest';
import { parseCidrList, type BrokerDestination } from '@herald/contract';
import { listWebhookCallAttempts, type NewEvent } from '@herald/store';
import { freePort, startTcpProxy } from '@herald/testkit';
import {
  brokerWebhook,
  emitEvents,
  itemEvent,
  pipelineTest,
  sendToDestination,
  waitForCall,
} from '../../../harness.test-support.js';
import type { SendResult } from '../http-client.js';
import {
  startOwnMosquitto,
  startOwnNats,
  startOwnRedis,
  type OwnBroker,
  type OwnBrokerOptions,
} from './brokers.test-support.js';
import { AMQP_URL } from './consumers.test-support.js';
import { Publishers } from './publishers.js';

// Bad destinations on NATS, MQTT and Redis streams (issue #33 item 5): each a classified attempt
// failure (the publisher's error kind) with a reason a person reads in the call log, retried,
// never a crash, the password in neither. Each case runs against a broker of its own, so that it
// may demand a password, cap message sizes or go silent behind a proxy.

const it = pipelineTest({ retry: { scheduleMs: [60_000], jitter: 0, retryAfterMaxMs: 1000 } });
const unique = (prefix: string) => `herald-test-${prefix}-${randomBytes(6).toString('hex')}`;
const PASSWORD = 'the-right-password';
const WRONG = 'not-the-password';
/** A payload larger than the size limit the cases give their brokers (4 KiB). */
const LIMIT = 4096;
const BIG = 'x'.repeat(LIMIT * 2);

type Kind = 'nats' | 'mqtt' | 'redis_stream';
const start: Record<Kind, (options?: OwnBrokerOptions) => Promise<OwnBroker>> = {
  nats: startOwnNats,
  mqtt: startOwnMosquitto,
  redis_stream: startOwnRedis,
};

/** The destination of `kind` at `url`, to a subject, topic or stream of the test's own. */
function destinationAt(
  kind: Kind,
  url: string,
  credentials: { username: string | null; password: string | null } = {
    username: null,
    password: null,
  },
): BrokerDestination {
  switch (kind) {
    case 'nats':
      return {
        kind,
        url,
        subject: unique('subject').replaceAll('-', '.'),
        jetstream: true,
        ...credentials,
      };
    case 'mqtt':
      return { kind, url, topic: `herald-test/${unique('topic')}`, ...credentials };
    case 'redis_stream':
      return { kind, url, stream: unique('stream'), max_len: 100, ...credentials };
  }
}

interface Case {
  kind: BrokerDestination['kind'];
  name: string;
  /** The destination, its broker started (and closed after the test) as the case needs. */
  destination: () => Promise<BrokerDestination>;
  /** A payload to send instead of the default one. */
  title?: string;
  error: Extract<SendResult, { kind: 'error' }>['error'];
  reason: RegExp;
}

/** A broker of the case's own, closed after the test. */
async function ownBroker(kind: Kind, options?: OwnBrokerOptions): Promise<OwnBroker> {
  const broker = await start[kind](options);
  onTestFinished(() => broker.close());
  return broker;
}

/** A NATS stream capturing every subject of the broker at `url`. */
async function captureAll(url: string): Promise<void> {
  const nc = await natsConnect({ servers: url });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: 'all', subjects: ['>'] });
  await nc.close();
}

/** A broker that accepts connections and then answers nothing (a proxy that went silent). */
async function silentBroker(kind: Kind) {
  const broker = await ownBroker(kind);
  return silentProxy(broker.url);
}

/** A proxy to the broker at `url` that went silent: its URL. */
async function silentProxy(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
  onTestFinished(() => proxy.close());
  proxy.blackhole();
  return proxy.url(url);
}

/** The event with its record's title replaced (a payload of that size). */
function titled(event: NewEvent, title: string | undefined): NewEvent {
  if (title === undefined) return event;
  return { ...event, entity: { ...(event.entity as object), attributes: { title } } };
}

const CASES: Case[] = [];
for (const kind of ['nats', 'mqtt', 'redis_stream'] as const) {
  const scheme = { nats: 'nats', mqtt: 'mqtt', redis_stream: 'redis' }[kind];
  CASES.push(
    {
      kind,
      name: 'an unreachable broker',
      destination: async () => destinationAt(kind, `${scheme}://127.0.0.1:${await freePort()}`),
      error: 'refused',
      reason: /at 127\.0\.0\.1:\d+ is unreachable: connection refused/,
    },
    {
      kind,
      name: 'refused credentials',
      destination: async () => {
        const broker = await ownBroker(kind, { user: 'herald', password: PASSWORD });
        return destinationAt(kind, broker.url, { username: 'herald', password: WRONG });
      },
      error: 'error',
      reason: /refused the credentials/,
    },
    {
      kind,
      name: 'a broker that accepts the connection and then answers nothing',
      destination: async () => destinationAt(kind, await silentBroker(kind)),
      error: 'timeout',
      reason: /did not answer in time/,
    },
  );
}
CASES.push(
  {
    // RabbitMQ's other failures are in destinations.int.test.ts; its server is the shared one.
    kind: 'rabbitmq',
    name: 'a broker that accepts the connection and then answers nothing',
    destination: async () => ({
      kind: 'rabbitmq',
      url: await silentProxy(AMQP_URL),
      exchange: unique('exchange'),
      routing_key: 'k',
      username: null,
      password: null,
    }),
    error: 'timeout',
    reason: /RabbitMQ at 127\.0\.0\.1:\d+ did not answer in time/,
  },
  {
    kind: 'nats',
    name: 'a subject no JetStream stream captures',
    destination: async () => destinationAt('nats', (await ownBroker('nats')).url),
    error: 'error',
    reason: /has no JetStream stream for subject "[^"]+" \(no responders/,
  },
  {
    kind: 'nats',
    name: 'a message larger than max_payload',
    destination: async () =>
      destinationAt('nats', (await ownBroker('nats', { maxMessageBytes: LIMIT })).url),
    title: BIG,
    error: 'error',
    reason:
      /the message is too large for NATS at 127\.0\.0\.1:\d+: \d+ bytes, its max_payload is 4096/,
  },
  {
    kind: 'mqtt',
    name: 'a message larger than message_size_limit',
    destination: async () =>
      destinationAt('mqtt', (await ownBroker('mqtt', { maxMessageBytes: LIMIT })).url),
    title: BIG,
    error: 'error',
    reason:
      /the message is too large for MQTT broker at 127\.0\.0\.1:\d+, or refused: it answered with a PUBACK reason code/,
  },
  {
    kind: 'mqtt',
    name: 'a message larger than the maximum packet size the broker announced',
    destination: async () =>
      destinationAt('mqtt', (await ownBroker('mqtt', { maxPacketBytes: LIMIT })).url),
    title: BIG,
    error: 'error',
    reason:
      /the message is too large for MQTT broker at 127\.0\.0\.1:\d+: about \d+ bytes, its maximum packet size is 4096/,
  },
);

describe.each(CASES)('$kind: $name', ({ kind, destination, title, error, reason }) => {
  it('is a classified failure with a readable reason in the call log, retried', async ({
    db,
    pipeline,
  }) => {
    const target = await destination();
    // The publisher's classification (what the circuit breaker and the metrics go by).
    const publishers = new Publishers({
      connectTimeoutMs: pipeline.settings.connectTimeoutMs,
      totalTimeoutMs: pipeline.settings.timeoutMs,
      allowCidrs: parseCidrList('127.0.0.0/8'),
    });
    onTestFinished(() => publishers.close());
    const direct = await publishers.publish(target, {
      id: 'msg_direct',
      body: JSON.stringify({ title: title ?? 'small' }),
      headers: { 'webhook-id': 'msg_direct' },
    });
    expect(direct).toMatchObject({ kind: 'error', error });
    expect(direct.kind === 'error' && direct.reason).toMatch(reason);

    // Through the pipeline: the call log says it, the call waits for its retry.
    const { call } = await sendToDestination(db, pipeline, target, ['rescheduled'], {
      event: (environment) => titled(itemEvent({ environment }), title),
    });
    expect(call.failureReason).toMatch(reason);
    const logged = await listWebhookCallAttempts(db, call.id, { offset: 0, limit: 10 });
    const attempt = logged!.attempts[0]!;
    expect(attempt.failureReason).toMatch(reason);
    expect(attempt.requestUrl).toContain(`${kind}: `);
    expect(JSON.stringify(logged)).not.toContain(WRONG);
  });
});

it('Redis streams have no size limit to refuse: a large message is added whole', async ({
  db,
  pipeline,
}) => {
  const broker = await ownBroker('redis_stream');
  const target = destinationAt('redis_stream', broker.url);
  await sendToDestination(db, pipeline, target, ['success'], {
    event: (environment) => titled(itemEvent({ environment }), BIG),
  });
});

// Reaches the broker of `captureAll` only through a silent proxy: the JetStream publish is sent
// on a connection made before the proxy went silent, and its PubAck never comes.
it('nats: a PubAck that never comes is a timeout, in words', async ({ db, pipeline }) => {
  const broker = await ownBroker('nats');
  await captureAll(broker.url);
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: broker.port });
  onTestFinished(() => proxy.close());
  const target = destinationAt('nats', proxy.url(broker.url));
  const { webhook, environment: env } = await brokerWebhook(db, pipeline, target);
  const first = itemEvent({ environment: env });
  await emitEvents(db, pipeline, [first]);
  await waitForCall(db, first.id, webhook.id, ['success']);
  proxy.blackhole();
  const second = itemEvent({ environment: env });
  await emitEvents(db, pipeline, [second]);
  const call = await waitForCall(db, second.id, webhook.id, ['rescheduled']);
  expect(call.failureReason).toMatch(/did not acknowledge the message on subject "[^"]+" in time/);
});
