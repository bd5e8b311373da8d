import { Redis } from 'ioredis';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import {
  BrokerError,
  acknowledged,
  brokerHost,
  credentialsOf,
  failed,
  guardBrokerAddress,
  networkFailure,
  withTimeout,
  type BrokerMessage,
  type Publisher,
  type PublisherOptions,
} from './publisher.js';
import type { SendResult } from '../http-client.js';

type StreamDestination = Extract<BrokerDestination, { kind: 'redis_stream' }>;

/**
 * Redis streams (ioredis): one client per URL and credentials, failing fast (no offline queue,
 * no reconnecting: a lost one is replaced at the next publish). A message is an XADD with
 * `MAXLEN ~ max_len`: the field `body` and one field per header; the entry id is its answer.
 */
export class RedisStreamPublisher implements Publisher {
  #closed = false;

  private constructor(
    private readonly client: Redis,
    private readonly broker: string,
  ) {
    client.on('end', () => {
      this.#closed = true;
    });
  }

  static async connect(
    destination: StreamDestination,
    options: PublisherOptions,
  ): Promise<RedisStreamPublisher> {
    const broker = `Redis at ${brokerHost(destination.url)}`;
    await guardBrokerAddress(destination.url, options.allowCidrs);
    const { username, password } = credentialsOf(destination);
    const client = new Redis(destination.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: options.connectTimeoutMs,
      connectionName: 'herald-delivery',
      ...(username !== null && { username }),
      ...(password !== null && { password }),
    });
    // Commands in flight fail with it; the client is replaced once it ended. A refused AUTH is
    // only told here: connect() then rejects with "Connection is closed".
    let lastError: unknown;
    client.on('error', (error: unknown) => {
      lastError = error;
    });
    try {
      await client.connect();
      return new RedisStreamPublisher(client, broker);
    } catch (error) {
      client.disconnect();
      const cause = lastError ?? error;
      throw new BrokerError(connectFailure(cause, broker), { cause });
    }
  }

  get open(): boolean {
    return !this.#closed && this.client.status === 'ready';
  }

  publish(
    destination: StreamDestination,
    message: BrokerMessage,
    signal: AbortSignal,
  ): Promise<SendResult> {
    const where = `stream "${destination.stream}"`;
    return withTimeout(
      this.#publish(destination, message, where),
      signal,
      `${this.broker} did not answer the XADD to ${where} in time`,
    );
  }

  async #publish(
    destination: StreamDestination,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult> {
    const fields = Object.entries(message.headers).flat();
    try {
      const id = await this.client.xadd(
        destination.stream,
        'MAXLEN',
        '~',
        destination.max_len,
        '*',
        ...fields,
        'body',
        message.body,
      );
      return acknowledged(`added by ${this.broker} to ${where} as entry ${id ?? '?'}`, {
        'message-id': message.id,
        stream: destination.stream,
        'entry-id': id ?? '',
      });
    } catch (error) {
      const network = networkFailure(error, this.broker);
      if (network) return network;
      const text = errorMessage(error);
      if (/WRONGTYPE/.test(text)) {
        return failed(
          'error',
          `${this.broker}: the key of ${where} holds something other than a stream (${text})`,
        );
      }
      if (/NOAUTH|WRONGPASS|NOPERM/.test(text)) {
        return failed('error', `${this.broker} refused the credentials (${text})`);
      }
      if (/OOM|max.*bulk|too large/i.test(text)) {
        return failed('error', `the message is too large for ${this.broker} (${text})`);
      }
      return failed('error', `${this.broker} refused the XADD to ${where}: ${text}`);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

function connectFailure(error: unknown, broker: string): Extract<SendResult, { kind: 'error' }> {
  const network = networkFailure(error, broker);
  if (network && network.kind === 'error') return network;
  const message = errorMessage(error);
  if (/NOAUTH|WRONGPASS|invalid password|NOPERM/i.test(message)) {
    return {
      kind: 'error',
      error: 'error',
      reason: `${broker} refused the credentials (${message})`,
    };
  }
  if (/timeout/i.test(message)) {
    return { kind: 'error', error: 'timeout', reason: `${broker} did not answer in time` };
  }
  return { kind: 'error', error: 'error', reason: `could not connect to ${broker}: ${message}` };
}
