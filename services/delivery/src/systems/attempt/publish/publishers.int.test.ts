import { randomBytes } from 'node:crypto';
import { connect as natsConnect } from 'nats';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCidrList, type BrokerDestination } from '@herald/contract';
import { NATS_URL, REDIS_URL } from './consumers.test-support.js';
import { Publishers } from './publishers.js';

// The publishers alone, against the real brokers (scripts/ensure-services.sh).
const none = { username: null, password: null };
const message = { id: 'msg_1', body: '{"a":1}', headers: { 'webhook-id': 'msg_1' } };
const unique = (prefix: string) => `herald-test-${prefix}-${randomBytes(6).toString('hex')}`;

const publishers = new Publishers({
  connectTimeoutMs: 1000,
  totalTimeoutMs: 2000,
  allowCidrs: parseCidrList('127.0.0.0/8'),
});
afterAll(() => publishers.close());

const failureOf = async (destination: BrokerDestination, body = message.body) => {
  const result = await publishers.publish(destination, { ...message, body });
  if (result.kind !== 'error') throw new Error(`expected a failure, got ${result.status}`);
  return result;
};

describe('Publishers', () => {
  it('refuses a broker on a blocked address without connecting (the SSRF guard)', async () => {
    const guarded = new Publishers({
      connectTimeoutMs: 1000,
      totalTimeoutMs: 2000,
      allowCidrs: [],
    });
    const result = await guarded.publish(
      { kind: 'redis_stream', url: REDIS_URL, stream: 's', max_len: 10, ...none },
      message,
    );
    await guarded.close();
    expect(result).toMatchObject({ kind: 'error', error: 'blocked' });
  });

  it('an unreachable broker: connection refused, in words', async () => {
    const result = await failureOf({
      kind: 'rabbitmq',
      url: 'amqp://127.0.0.1:1',
      exchange: 'x',
      routing_key: '',
      ...none,
    });
    expect(result).toMatchObject({ error: 'refused' });
    expect(result.reason).toBe('RabbitMQ at 127.0.0.1:1 is unreachable: connection refused');
  });

  it('a message larger than NATS takes is refused before it is sent', async () => {
    const result = await failureOf(
      { kind: 'nats', url: NATS_URL, subject: unique('big'), jetstream: false, ...none },
      'x'.repeat(8 * 1024 * 1024 + 1),
    );
    expect(result.reason).toMatch(/too large for NATS at 127\.0\.0\.1:4222/);
  });

  it('refused Redis credentials, in words, the password not in them', async () => {
    const result = await failureOf({
      kind: 'redis_stream',
      url: REDIS_URL,
      stream: unique('s'),
      max_len: 10,
      username: 'nobody',
      password: 'wrong-password',
    });
    expect(result.reason).toMatch(/refused the credentials/);
    expect(result.reason).not.toContain('wrong-password');
  });

  it('core NATS: published once the server read it, concurrent publishes sharing the connection', async () => {
    const subject = unique('core');
    const nc = await natsConnect({ servers: NATS_URL });
    const subscription = nc.subscribe(subject, { max: 2 });
    await nc.flush();
    const destination: BrokerDestination = {
      kind: 'nats',
      url: NATS_URL,
      subject,
      jetstream: false,
      ...none,
    };
    const results = await Promise.all([
      publishers.publish(destination, message),
      publishers.publish(destination, message),
    ]);
    expect(results.map((r) => r.kind === 'response' && r.status)).toEqual([200, 200]);
    const got: string[] = [];
    for await (const m of subscription) got.push(m.headers?.get('webhook-id') ?? '');
    expect(got).toEqual(['msg_1', 'msg_1']);
    await nc.close();
  });
});
